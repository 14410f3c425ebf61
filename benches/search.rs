//! `search_conversations` at scale: the real engine through [`Host::call`] with its
//! search index and with the index turned off (DuckDB), and the plain DuckDB query,
//! side by side on one generated store, with a check that all return the same rows.
//! Also: a one-shot `skills run` process (wall time, peak RSS), the index's build
//! time and size, and an incremental update after appending 1,000 messages.
//!
//! Environment: `BENCH_MESSAGES` (default 1,000,000), `BENCH_SEED` (default 0x5EED),
//! `BENCH_INCREMENTAL_ONLY` (set: skip the cases, measure only the incremental update),
//! `BENCH_RUNS` (timed DuckDB runs per case, default 5), `BENCH_DIR` (data folder),
//! `BENCH_DUCKDB_ENGINE=0` (10M: skip the engine's DuckDB path, time the plain DuckDB
//! query once; "ratio" is then plain / index; run with `SKILLS_CALL_TIMEOUT_MS=0`).
//! The store is generated once per (messages, seed) and reused by later runs.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::too_many_lines)]

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use common::search_cases::{duckdb_keys, engine_keys, CASES, LIMIT};
use common::{fmt_bytes, fmt_dur, measure, reset_peak, rss, Stats};
use serde_json::json;
use skills::bench::gen::{self, Spec};
use skills::engines::Context;
use skills::host::Host;
use skills::model::Message;
use skills::stores::conversations::index::{self, Index};
use skills::stores::conversations::ConversationStore;
use skills::stores::StorePaths;

/// Wall time and peak RSS of one `skills run search-conversations` process.
fn one_shot(dir: &Path, skills_dir: &Path, term: &str) -> Result<(Duration, u64)> {
    let t = Instant::now();
    let out = std::process::Command::new("/usr/bin/time")
        .args(["-f", "%M"])
        .arg(env!("CARGO_BIN_EXE_skills"))
        .arg("--skills-dir")
        .arg(skills_dir)
        .arg("--data-dir")
        .arg(dir)
        .args(["run", "search-conversations", "--arg"])
        .arg(format!("term={term}"))
        .output()?;
    let wall = t.elapsed();
    if !out.status.success() {
        bail!(
            "skills run failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let kb: u64 = String::from_utf8_lossy(&out.stderr)
        .lines()
        .last()
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or(0);
    Ok((wall, kb * 1024))
}

fn ratio(a: Stats, b: Stats) -> String {
    let r = a.median.as_secs_f64() / b.median.as_secs_f64().max(1e-9);
    if r >= 100.0 {
        format!("{r:.0}×")
    } else {
        format!("{r:.1}×")
    }
}

/// What `Host::call` spends redacting secrets in one call's output (its structured
/// data and rendered text, `skills::redact`): the median over 2,000 passes of clone
/// and redact, minus the median of the clone alone (the host redacts in place). For
/// the fast path the host takes, then for the per-string reference path
/// (`redact_json_reference`, `redact_reference`), which must find the same.
fn redaction_cost(out: &skills::host::CallOutput) -> (Duration, Duration) {
    let r = skills::redact::Redactor::global().expect("the detector set compiles");
    let (clone, _) = measure(2_000, Duration::from_secs(2), || {
        (out.data.clone(), out.text.clone())
    });
    let (fast, _) = measure(2_000, Duration::from_secs(2), || {
        let mut data = out.data.clone();
        let text = out.text.clone();
        r.redact_json(&mut data) + r.redact(&text).count
    });
    let (reference, _) = measure(2_000, Duration::from_secs(2), || {
        let mut data = out.data.clone();
        let text = out.text.clone();
        r.redact_json_reference(&mut data) + r.redact_reference(&text).count
    });
    (
        fast.median.saturating_sub(clone.median),
        reference.median.saturating_sub(clone.median),
    )
}

fn main() -> Result<()> {
    if std::env::args().any(|a| a == "--list") {
        return Ok(()); // `cargo bench -- --list` compatibility
    }
    let messages = common::env_usize("BENCH_MESSAGES", 1_000_000);
    let seed = common::env_usize("BENCH_SEED", 0x5EED) as u64;
    let runs = common::env_usize("BENCH_RUNS", 5);
    let duckdb_engine = std::env::var("BENCH_DUCKDB_ENGINE").map_or(true, |v| v != "0");
    let spec = Spec { messages, seed };
    let dir = common::stores::conversation_store(spec)?;

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

    let db = dir.join("conversations.duckdb");
    // An index of an older format (e.g. unstemmed postings) is rewritten too: the
    // figures are the current format's.
    let why = match Index::open(&db) {
        Err(why) => Some(why.to_string()),
        Ok(ix) if !ix.has_postings() => Some("an older segment format".into()),
        Ok(_) => None,
    };
    if let Some(why) = why {
        eprintln!("index unusable ({why}): building it …");
        let t = Instant::now();
        let report = ConversationStore::open_rw(&db)?.close()?;
        eprintln!("built in {} ({report:?})", fmt_dur(t.elapsed()));
    }
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
    let plain_host = Host::load(
        &skills_dir,
        Context::new(StorePaths::in_dir(&dir)).with_search_index(false),
    );
    let store = plain_host.context().conversations()?;
    let conn = store.connection()?;
    let n: i64 = conn.query_row("SELECT count(*) FROM all_conversations", [], |r| r.get(0))?;
    println!(
        "host load + store open: {} (RSS {})\n",
        fmt_dur(t.elapsed()),
        fmt_bytes(rss())
    );
    let index = Index::open(&db).map_err(|e| anyhow::anyhow!("search index: {e}"))?;
    let text_bytes: u64 = conn.query_row(
        "SELECT sum(strlen(content))::BIGINT FROM all_conversations",
        [],
        |r| r.get(0),
    )?;
    let index_bytes = common::dir_bytes(&index::dir_of(&db));
    println!(
        "search index: {} rows in {} segments, {} on disk for {} of text ({:.2}×)\n",
        index.rows(),
        index.manifest().segments.len(),
        fmt_bytes(index_bytes),
        fmt_bytes(text_bytes),
        index_bytes as f64 / text_bytes.max(1) as f64
    );
    if index.rows() != u64::try_from(n).unwrap_or(0) {
        bail!("index holds {} rows, store has {n}", index.rows());
    }

    let header = [
        "case",
        "rows",
        "engine, index (Host::call) median",
        "p95",
        "engine, DuckDB median",
        "p95",
        "plain DuckDB median",
        "DuckDB engine / index engine",
        "one-shot `skills run` wall",
        "one-shot peak RSS",
        "secret redaction of the output",
        "redaction / index engine",
        "per-string reference redaction",
        "same rows",
    ];
    let mut rows = Vec::new();
    let mut all_same = true;
    let mut medians = Vec::new();
    let cases = if std::env::var_os("BENCH_INCREMENTAL_ONLY").is_some() {
        &CASES[..0]
    } else {
        CASES
    };
    for (label, term, role) in cases {
        eprintln!("case {label} …");
        let args = json!({"term": term, "role": role, "limit": LIMIT});
        let budget = Duration::from_secs(60);
        let (fast, out) = measure(runs.max(200), Duration::from_secs(5), || {
            host.call("search-conversations", args.clone()).unwrap()
        });
        // At 10M one DuckDB scan takes up to a minute: `BENCH_DUCKDB_ENGINE=0` skips the
        // engine's DuckDB path and times the plain query once (no warm-up).
        let slow = duckdb_engine.then(|| {
            measure(runs, budget, || {
                plain_host
                    .call("search-conversations", args.clone())
                    .unwrap()
            })
        });
        let (plain, expected) = if duckdb_engine {
            measure(runs, budget, || {
                duckdb_keys(&conn, term, *role, LIMIT).unwrap()
            })
        } else {
            let t = Instant::now();
            let keys = duckdb_keys(&conn, term, *role, LIMIT).unwrap();
            (common::Stats::of(vec![t.elapsed()]), keys)
        };
        let shot = if role.is_none() && !term.is_empty() {
            let mut best = (Duration::MAX, 0);
            for _ in 0..3 {
                let (w, r) = one_shot(&dir, &skills_dir, term)?;
                if w < best.0 {
                    best = (w, r);
                }
            }
            Some(best)
        } else {
            None
        };
        let (redaction, reference) = redaction_cost(&out);
        let same = slow
            .as_ref()
            .is_none_or(|(_, slow_out)| out.data == slow_out.data)
            && engine_keys(&out.data) == expected;
        all_same &= same;
        medians.push(fast.median);
        rows.push(vec![
            (*label).to_owned(),
            expected.len().to_string(),
            fmt_dur(fast.median),
            fmt_dur(fast.p95),
            slow.as_ref().map_or("–".into(), |(s, _)| fmt_dur(s.median)),
            slow.as_ref().map_or("–".into(), |(s, _)| fmt_dur(s.p95)),
            fmt_dur(plain.median),
            slow.as_ref()
                .map_or_else(|| ratio(plain, fast), |(s, _)| ratio(*s, fast)),
            shot.map_or("–".into(), |s| fmt_dur(s.0)),
            shot.map_or("–".into(), |s| fmt_bytes(s.1)),
            fmt_dur(redaction),
            format!(
                "{:.1} %",
                100.0 * redaction.as_secs_f64() / fast.median.as_secs_f64().max(1e-9)
            ),
            format!(
                "{} ({:.1} %)",
                fmt_dur(reference),
                100.0 * reference.as_secs_f64() / fast.median.as_secs_f64().max(1e-9)
            ),
            if same { "yes" } else { "**NO**" }.to_owned(),
        ]);
    }
    common::table(&header, &rows);
    medians.sort();
    if !medians.is_empty() {
        println!(
        "p50 over the {} cases' medians: {}; worst median {}. runs: index engine ≥ 200 runs or \
         5 s; {}; one-shot: best of 3 processes (`/usr/bin/time`), limit = {LIMIT}.\n",
        medians.len(),
        fmt_dur(medians[medians.len() / 2]),
        fmt_dur(*medians.last().unwrap_or(&Duration::ZERO)),
        if duckdb_engine {
            format!("DuckDB paths {runs} timed runs after one warm-up")
        } else {
            "plain DuckDB one timed run, no warm-up (BENCH_DUCKDB_ENGINE=0)".to_owned()
        },
    );
    }

    // Incremental: 1,000 messages appended to a copy of the store.
    drop(conn);
    drop(store);
    drop(plain_host);
    let copy = dir.with_extension("append");
    let _ = std::fs::remove_dir_all(&copy);
    std::fs::create_dir_all(&copy)?;
    std::fs::copy(&db, copy.join("conversations.duckdb"))?;
    let ixcopy = index::dir_of(&copy.join("conversations.duckdb"));
    std::fs::create_dir_all(&ixcopy)?;
    for e in std::fs::read_dir(index::dir_of(&db))? {
        let e = e?;
        std::fs::copy(e.path(), ixcopy.join(e.file_name()))?;
    }
    // The copy has new inodes and times: record them as the index's store, as a
    // writer that had just closed it would.
    let mut m = index::Manifest::read(&ixcopy).map_err(|e| anyhow::anyhow!("{e}"))?;
    m.store = index::StoreStamp::of(&copy.join("conversations.duckdb"));
    std::fs::write(ixcopy.join(index::MANIFEST), serde_json::to_vec(&m)?)?;
    let appended: Vec<Message> = gen::Generator::new(Spec {
        messages: 1_000,
        seed: seed ^ 0xA99E,
    })
    .flatten()
    .collect();
    let t = Instant::now();
    let store = ConversationStore::open_rw(&copy.join("conversations.duckdb"))?;
    store.insert(&appended)?;
    let stored = t.elapsed();
    let t = Instant::now();
    let report = store.close()?;
    let closed = t.elapsed();
    println!(
        "incremental: 1,000 messages appended in {} (DuckDB insert), index updated at close in {} \
         ({report:?})\n",
        fmt_dur(stored),
        fmt_dur(closed)
    );
    let _ = std::fs::remove_dir_all(&copy);
    if !all_same {
        bail!("the index path returned rows different from DuckDB");
    }
    Ok(())
}
