//! `search_conversations` at scale: the real engine through [`Host::call`], the plain
//! DuckDB query, and the newest-first scan prototype, side by side on one generated
//! store, with a differential check that all three return the same rows.
//!
//! Environment: `BENCH_MESSAGES` (default 1,000,000), `BENCH_SEED` (default 0x5EED),
//! `BENCH_RUNS` (timed DuckDB runs per case, default 5), `BENCH_DIR` (data folder).
//! The store is generated once per (messages, seed) and reused by later runs.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::too_many_lines)]

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};
use common::{fmt_bytes, fmt_dur, measure, peak_rss, reset_peak, rss, Stats};
use serde_json::{json, Value};
use skills::bench::gen::{self, Spec};
use skills::bench::scan::{duckdb_keys, BlockIndex, NewestFirst};
use skills::engines::Context;
use skills::runtime::host::Host;
use skills::stores::conversations::ConversationStore;
use skills::stores::StorePaths;

/// (label, term, role); an empty term with role `user` is the questions mode.
const CASES: &[(&str, &str, Option<&str>)] = &[
    ("common `the`", "the", None),
    ("common `serde`", "serde", None),
    ("rare `persofi`", gen::RARE_TERM, None),
    ("absent `zqxjvkw`", gen::ABSENT_TERM, None),
    ("multi-word `async fn`", "async fn", None),
    ("underscore `user_id`", "user_id", None),
    ("wildcard `serde%json`", "serde%json", None),
    ("multibyte `CAFÉ`", "CAFÉ", None),
    ("multibyte `café`", "café", None),
    ("role=user `serde`", "serde", Some("user")),
    (
        "role=assistant `persofi`",
        gen::RARE_TERM,
        Some("assistant"),
    ),
    ("questions mode", "", Some("user")),
];

const LIMIT: usize = 15;

fn ensure_store(dir: &Path, spec: Spec) -> Result<()> {
    let done = dir.join("complete");
    if done.exists() {
        return Ok(());
    }
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)?;
    eprintln!(
        "generating {} messages into {} …",
        spec.messages,
        dir.display()
    );
    reset_peak();
    let t = Instant::now();
    let store = ConversationStore::open_rw(&dir.join("conversations.duckdb"))?;
    let g = gen::fill_store(&store, spec, 50_000)?;
    drop(store);
    let secs = t.elapsed().as_secs_f64();
    let line = format!(
        "generated and stored {} messages ({} conversations, {} of text) in {secs:.1} s \
         ({:.0} messages/s through ConversationStore::insert, batches of 50,000), peak RSS {}",
        g.messages,
        g.conversations,
        fmt_bytes(g.text_bytes),
        g.messages as f64 / secs,
        fmt_bytes(peak_rss()),
    );
    std::fs::write(&done, &line)?;
    Ok(())
}

fn engine_keys(data: &Value) -> Vec<(String, String)> {
    data["rows"]
        .as_array()
        .map(|rows| {
            rows.iter()
                .map(|r| {
                    (
                        r["conversation_id"].as_str().unwrap_or("").to_owned(),
                        r["message_id"].as_str().unwrap_or("").to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn ratio(a: Stats, b: Stats) -> String {
    let r = a.median.as_secs_f64() / b.median.as_secs_f64().max(1e-9);
    if r >= 100.0 {
        format!("{r:.0}×")
    } else {
        format!("{r:.1}×")
    }
}

fn main() -> Result<()> {
    if std::env::args().any(|a| a == "--list") {
        return Ok(()); // `cargo bench -- --list` compatibility
    }
    let messages = common::env_usize("BENCH_MESSAGES", 1_000_000);
    let seed = common::env_usize("BENCH_SEED", 0x5EED) as u64;
    let runs = common::env_usize("BENCH_RUNS", 5);
    let spec = Spec { messages, seed };
    let dir = common::bench_dir().join(format!("search-{messages}-{seed:x}"));
    ensure_store(&dir, spec)?;

    println!("## search_conversations at {messages} messages\n");
    println!("machine: {}\n", common::machine());
    println!(
        "store: {}",
        std::fs::read_to_string(dir.join("complete")).unwrap_or_default()
    );
    println!(
        "store size on disk: {} ({})\n",
        fmt_bytes(common::dir_bytes(&dir)),
        dir.display()
    );

    let skills_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("skills");
    reset_peak();
    let t = Instant::now();
    let host = Host::load(&skills_dir, Context::new(StorePaths::in_dir(&dir)));
    if host.get("search-conversations").is_none() {
        bail!(
            "skill `search-conversations` did not load: {:?}",
            host.diagnostics()
        );
    }
    let store = host.context().conversations()?;
    let conn = store.connection()?;
    let n: i64 = conn.query_row("SELECT count(*) FROM all_conversations", [], |r| r.get(0))?;
    println!(
        "host load + store open: {} (RSS {})\n",
        fmt_dur(t.elapsed()),
        fmt_bytes(rss())
    );

    reset_peak();
    let before = rss();
    let t = Instant::now();
    let scan = NewestFirst::load(&conn).context("loading the scan prototype")?;
    let load_time = t.elapsed();
    println!(
        "scan prototype load ({} rows, newest first, folded text): {}, heap {} , RSS +{}, peak RSS {}\n",
        scan.len(),
        fmt_dur(load_time),
        fmt_bytes(scan.heap_bytes() as u64),
        fmt_bytes(rss().saturating_sub(before)),
        fmt_bytes(peak_rss())
    );
    if usize::try_from(n).unwrap_or(0) != scan.len() {
        bail!("scan loaded {} rows, store has {n}", scan.len());
    }

    let block_rows = common::env_usize("BENCH_BLOCK_ROWS", 256);
    let gram = common::env_usize("BENCH_GRAM", 4);
    for (n, rows) in [(3, 64), (3, 256), (4, 64), (4, 256), (4, 1024)] {
        let ix = BlockIndex::build(&scan, n, rows);
        println!(
            "- {n}-gram filter, {rows} rows per block: {}, {:.0}% bits set; blocks read for \
             `persofi` {:.1}%, `serde%json` {:.1}%, `async fn` {:.1}%, absent {:.1}%",
            fmt_bytes(ix.heap_bytes() as u64),
            ix.fill() * 100.0,
            ix.selectivity(gen::RARE_TERM) * 100.0,
            ix.selectivity("serde%json") * 100.0,
            ix.selectivity("async fn") * 100.0,
            ix.selectivity(gen::ABSENT_TERM) * 100.0,
        );
    }
    println!();
    reset_peak();
    let t = Instant::now();
    let index = BlockIndex::build(&scan, gram, block_rows);
    println!(
        "{gram}-gram block filter used below ({block_rows} rows per block, 65,536 bits each): built in {}, {} , {:.0}% of bits set\n",
        fmt_dur(t.elapsed()),
        fmt_bytes(index.heap_bytes() as u64),
        index.fill() * 100.0
    );

    let header = [
        "case",
        "rows",
        "engine (Host::call) median",
        "engine p95",
        "plain DuckDB median",
        "plain DuckDB p95",
        "engine / plain",
        "scan median",
        "scan p95",
        "plain DuckDB / scan",
        "scan + n-gram filter median",
        "p95",
        "blocks read",
        "plain DuckDB / filtered scan",
        "same rows",
        "peak RSS",
    ];
    let mut rows = Vec::new();
    let mut all_same = true;
    for (label, term, role) in CASES {
        eprintln!("case {label} …");
        reset_peak();
        let args = json!({"term": term, "role": role, "limit": LIMIT});
        let budget = Duration::from_secs(60);
        let (engine, out) = measure(runs, budget, || {
            host.call("search-conversations", args.clone()).unwrap()
        });
        let (plain, expected) = measure(runs, budget, || {
            duckdb_keys(&conn, term, *role, LIMIT).unwrap()
        });
        let questions = term.is_empty() && *role == Some("user");
        let (fast, got) = measure(runs.max(50), Duration::from_secs(5), || {
            if questions {
                scan.questions(LIMIT)
            } else {
                scan.search(term, *role, LIMIT)
            }
        });
        let (indexed, got_indexed) = measure(runs.max(50), Duration::from_secs(5), || {
            if questions {
                scan.questions(LIMIT)
            } else {
                scan.search_indexed(&index, term, *role, LIMIT)
            }
        });
        let got: Vec<(String, String)> = got
            .iter()
            .map(|&i| {
                let (c, m) = scan.key(i);
                (c.to_owned(), m.to_owned())
            })
            .collect();
        let same = got == expected
            && engine_keys(&out.data) == expected
            && got_indexed
                .iter()
                .map(|&i| scan.key(i))
                .eq(expected.iter().map(|(c, m)| (c.as_str(), m.as_str())));
        all_same &= same;
        rows.push(vec![
            (*label).to_owned(),
            expected.len().to_string(),
            fmt_dur(engine.median),
            fmt_dur(engine.p95),
            fmt_dur(plain.median),
            fmt_dur(plain.p95),
            ratio(engine, plain),
            fmt_dur(fast.median),
            fmt_dur(fast.p95),
            ratio(plain, fast),
            fmt_dur(indexed.median),
            fmt_dur(indexed.p95),
            if questions {
                "–".to_owned()
            } else {
                format!("{:.1}%", index.selectivity(term) * 100.0)
            },
            ratio(plain, indexed),
            if same { "yes" } else { "**NO**" }.to_owned(),
            fmt_bytes(peak_rss()),
        ]);
    }
    common::table(&header, &rows);
    println!(
        "runs: engine and plain DuckDB {runs} timed runs after one warm-up (p95 = slowest of few \
         runs); scan ≥ 50 runs or 5 s. limit = {LIMIT}. Peak RSS is the whole process (DuckDB \
         buffer pool + scan prototype) since the case started.\n"
    );
    if !all_same {
        bail!("the scan prototype or the engine returned rows different from DuckDB");
    }
    Ok(())
}
