//! search-conversations on the team archive (PostgreSQL) at 1M messages: the twelve
//! cases of `benches/search.rs` through [`Host::call`] with `--archive` (the archive's
//! search, `skills::archive::search`), beside the local search index, PostgreSQL's
//! plain `content ILIKE` (no trigram index can serve it) and DuckDB's `ILIKE`, with a
//! check that every path returns DuckDB's rows.
//!
//! The archive is measured three ways: as the push left it (each partition's trigram
//! pending list part full), with every partition's pending list filled to the limit
//! (`gin_pending_list_limit`, the worst a search meets between two flushes: rows that
//! match no case, removed afterwards), and after `VACUUM` (pending lists empty).
//!
//! Environment: `BENCH_MESSAGES` (default 1,000,000), `BENCH_SEED`, `BENCH_RUNS` (timed
//! runs per case and path, default 30, or 5 s), `BENCH_DIR` (data folder; the store is
//! the one `benches/search.rs` generates), `BENCH_ARCHIVE_URL` (an archive to use:
//! it is pushed into unless it already holds the store's rows, and left running;
//! default: a throwaway PostgreSQL from `scripts/postgres`, stopped at the end),
//! `BENCH_EXPLAIN=1` (print `EXPLAIN ANALYZE` of each case's statement),
//! `BENCH_PENDING_KB` (how full the "pending lists full" phase fills each partition's
//! list, default the schema's `gin_pending_list_limit`).
//!
//! Run: `scripts/bench archive` (needs nothing else: the store is generated and
//! PostgreSQL fetched on first use).
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::too_many_lines)]

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use common::postgres::Server;
use common::search_cases::{duckdb_keys, engine_keys, CASES, LIMIT};
use common::{fmt_bytes, fmt_dur, measure, Stats};
use serde_json::json;
use skills::archive::schema::{SCHEMA, TRIGRAM_PENDING_LIST_KB};
use skills::archive::search::{newest_month, statement, windows, Pool, Query};
use skills::archive::Target;
use skills::bench::gen::Spec;
use skills::engines::Context;
use skills::host::Host;
use skills::stores::StorePaths;

/// `skills --data-dir DATA --archive URL ARGS…` (embedder off, a fixed machine
/// label); its stdout, or an error with its stderr.
fn skills(data: &Path, url: &str, args: &[&str]) -> Result<String> {
    let bin = Path::new(env!("CARGO_BIN_EXE_skills"));
    common::skills_on_archive(bin, data, url, args, &[("SKILLS_EMBEDDER", "none")])
}

/// Rows of the archive's `messages` (0 without a schema).
fn archive_rows(c: &mut postgres::Client) -> Result<i64> {
    let exists: bool = c
        .query_one(
            "SELECT to_regclass($1) IS NOT NULL",
            &[&format!("{SCHEMA}.messages")],
        )?
        .get(0);
    if !exists {
        return Ok(0);
    }
    Ok(
        c.query_one(&format!("SELECT count(*) FROM {SCHEMA}.messages"), &[])?
            .get(0),
    )
}

/// Each partition's trigram index (schema-qualified name).
fn trigram_partitions(c: &mut postgres::Client) -> Result<Vec<String>> {
    Ok(c.query(
        "SELECT format('%I.%I', n.nspname, x.relname) FROM pg_inherits i
         JOIN pg_class x ON x.oid = i.inhrelid JOIN pg_namespace n ON n.oid = x.relnamespace
         WHERE i.inhparent = to_regclass($1) ORDER BY 1",
        &[&format!("{SCHEMA}.messages_folded_trgm")],
    )?
    .iter()
    .map(|r| r.get(0))
    .collect())
}

/// (pending pages, pending tuples) summed over the partitions' trigram indexes.
fn pending(c: &mut postgres::Client) -> Result<(i64, i64)> {
    let mut total = (0, 0);
    for ix in trigram_partitions(c)? {
        let r = c.query_one(
            "SELECT pending_pages::bigint, pending_tuples FROM pgstatginindex($1::text::regclass)",
            &[&ix],
        )?;
        total.0 += r.get::<_, i64>(0);
        total.1 += r.get::<_, i64>(1);
    }
    Ok(total)
}

/// Machine id of the rows that fill the pending lists (they match no case).
const FILLER: &str = "bench-pending-filler";

/// Fills every partition's trigram pending list up to `kb` kB with copies of its own
/// rows whose text matches no case (vowels made `x`, no question, machine
/// [`FILLER`]): the limit is raised while filling, then set back, so the lists stay
/// as full as they may get between two flushes.
fn fill_pending(c: &mut postgres::Client, kb: i32) -> Result<()> {
    let cols: Vec<&str> = skills::archive::schema::MESSAGE_COLUMNS
        .iter()
        .map(|c| c.name)
        .collect();
    let select: Vec<String> = cols
        .iter()
        .map(|&name| match name {
            "machine" => format!("'{FILLER}'"),
            "content" | "content_folded" => format!("translate({name}, 'aeiou', 'xxxxx')"),
            "has_question" => "0".into(),
            "message_id" => "message_id || '-filler'".into(),
            other => other.to_owned(),
        })
        .collect();
    for ix in trigram_partitions(c)? {
        let table = c
            .query_one(
                "SELECT format('%I.%I', n.nspname, t.relname) FROM pg_index i
                 JOIN pg_class t ON t.oid = i.indrelid JOIN pg_namespace n ON n.oid = t.relnamespace
                 WHERE i.indexrelid = $1::text::regclass",
                &[&ix],
            )?
            .get::<_, String>(0);
        c.batch_execute(&format!(
            "ALTER INDEX {ix} SET (gin_pending_list_limit = 2097151)"
        ))?;
        let mut offset = 0i64;
        loop {
            let pages: i64 = c
                .query_one(
                    "SELECT pending_pages::bigint FROM pgstatginindex($1::text::regclass)",
                    &[&ix],
                )?
                .get(0);
            // Pages of 8 kB, of which GIN_PAGE_FREESIZE (≈8,150 bytes) hold tuples.
            if pages * 8150 >= i64::from(kb) * 1024 {
                break;
            }
            let n = c.execute(
                &format!(
                    "INSERT INTO {SCHEMA}.messages ({}) SELECT {} FROM {table}
                     WHERE machine <> '{FILLER}' LIMIT 500 OFFSET {offset}",
                    cols.join(", "),
                    select.join(", ")
                ),
                &[],
            )?;
            if n == 0 {
                break;
            }
            offset += 500;
        }
        c.batch_execute(&format!(
            "ALTER INDEX {ix} SET (gin_pending_list_limit = {TRIGRAM_PENDING_LIST_KB})"
        ))?;
    }
    Ok(())
}

/// PostgreSQL's plain query for a case, `content ILIKE` (ASCII-only case folding
/// under `COLLATE "C"`, no index can serve it): the keys in the engine's order.
fn plain_ilike(
    c: &mut postgres::Client,
    term: &str,
    role: Option<&str>,
) -> Result<Vec<(String, String)>> {
    let mut sql = format!("SELECT conversation_id, message_id FROM {SCHEMA}.messages WHERE ");
    let mut params: Vec<Box<dyn postgres::types::ToSql + Sync>> = Vec::new();
    if term.is_empty() && role == Some("user") {
        sql.push_str("role = 'user' AND NOT is_injected AND has_question = 1");
    } else {
        params.push(Box::new(format!("%{term}%")));
        sql.push_str("content ILIKE $1 ESCAPE ''");
        if let Some(role) = role {
            params.push(Box::new(role.to_owned()));
            sql.push_str(" AND role = $2");
            if role == "user" {
                sql.push_str(" AND NOT is_injected");
            }
        }
    }
    sql.push_str(&format!(
        " ORDER BY created DESC, source, conversation_id, message_id LIMIT {LIMIT}"
    ));
    let refs: Vec<&(dyn postgres::types::ToSql + Sync)> =
        params.iter().map(|b| b.as_ref() as _).collect();
    Ok(c.query(&sql, &refs)?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect())
}

/// `EXPLAIN (ANALYZE, BUFFERS)` of the archive's statement for a case.
fn explain(c: &mut postgres::Client, term: &str, role: Option<&str>) -> Result<String> {
    let questions = term.is_empty() && role == Some("user");
    let q = Query {
        term: (!questions).then_some(term),
        role,
        limit: i64::try_from(LIMIT).unwrap_or(15),
        ..Query::default()
    };
    let st = statement(&q);
    // As the search runs it: the newest window, then the others in one statement.
    let mut out = Vec::new();
    let mut found = 0;
    let windows = windows(newest_month(c)?);
    for part in [&windows[..1], &windows[1..]] {
        let missing = Some(i64::try_from(LIMIT - found).unwrap_or(0));
        let sql = st.sql(part);
        let plan = c.query(
            &format!("EXPLAIN (ANALYZE, BUFFERS) {sql}"),
            &st.refs(&missing),
        )?;
        found += c.query(&sql, &st.refs(&missing))?.len();
        out.push(format!(
            "windows {} – {}:",
            part[part.len() - 1].0,
            part[0].1
        ));
        out.extend(plan.iter().map(|r| r.get::<_, String>(0)));
        if found >= LIMIT {
            break;
        }
    }
    Ok(out.join("\n"))
}

fn main() -> Result<()> {
    if std::env::args().any(|a| a == "--list") {
        return Ok(()); // `cargo bench -- --list` compatibility
    }
    let messages = common::env_usize("BENCH_MESSAGES", 1_000_000);
    let seed = common::env_usize("BENCH_SEED", 0x5EED) as u64;
    let runs = common::env_usize("BENCH_RUNS", 30);
    let explaining = std::env::var("BENCH_EXPLAIN").is_ok_and(|v| v == "1");
    let fill_kb = i32::try_from(common::env_usize(
        "BENCH_PENDING_KB",
        usize::try_from(TRIGRAM_PENDING_LIST_KB).unwrap_or(0),
    ))?;
    let dir = common::stores::conversation_store(Spec { messages, seed })?;
    println!("## search_conversations on the team archive at {messages} messages\n");
    println!("machine: {}\n", common::machine());
    println!(
        "store: {}\n",
        std::fs::read_to_string(dir.join("complete")).unwrap_or_default()
    );

    let server = Server::start()?;
    // `BENCH_ARCHIVE_URL` is the archive itself; a started server gets a database.
    let url = match std::env::var("BENCH_ARCHIVE_URL") {
        Ok(url) if !url.is_empty() => url,
        _ => server.database("skills_bench")?,
    };
    let mut pg = postgres::Client::connect(&url, postgres::NoTls)?;
    let skills_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("skills");
    let local = Host::load(&skills_dir, Context::new(StorePaths::in_dir(&dir)));
    let duck = Host::load(
        &skills_dir,
        Context::new(StorePaths::in_dir(&dir)).with_search_index(false),
    );
    let store = duck.context().conversations()?;
    let conn = store.connection()?;
    let n: i64 = conn.query_row("SELECT count(*) FROM all_conversations", [], |r| r.get(0))?;

    if archive_rows(&mut pg)? != n {
        // Pushed from a copy: a push records this data folder's machine id in it.
        let data = tempfile::tempdir()?;
        std::fs::copy(
            dir.join("conversations.duckdb"),
            data.path().join("conversations.duckdb"),
        )?;
        skills(data.path(), &url, &["archive", "migrate"])?;
        eprintln!("pushing {n} messages …");
        let t = Instant::now();
        let report = skills(data.path(), &url, &["--json", "archive", "push"])?;
        let secs = t.elapsed().as_secs_f64();
        let report: serde_json::Value = serde_json::from_str(&report)?;
        println!(
            "push into an empty archive: {} messages in {secs:.1} s ({:.0} messages/s, {} \
             transactions)\n",
            report["messages_sent"],
            report["messages_sent"].as_f64().unwrap_or(0.0) / secs,
            report["batches"],
        );
        if archive_rows(&mut pg)? != n {
            bail!(
                "the archive holds {} rows after the push, the store {n}",
                archive_rows(&mut pg)?
            );
        }
    }
    pg.batch_execute(&format!(
        "CREATE EXTENSION IF NOT EXISTS pgstattuple; ANALYZE {SCHEMA}.messages"
    ))?;
    let size: i64 = pg
        .query_one("SELECT pg_database_size(current_database())", &[])?
        .get(0);
    println!(
        "archive database: {}\n",
        fmt_bytes(u64::try_from(size).unwrap_or(0))
    );

    let pool = Arc::new(Pool::new(Target::parse(&url)?));
    let archive = Host::load(
        &skills_dir,
        Context::new(StorePaths::in_dir(&dir)).with_archive(Some(pool)),
    );
    let budget = Duration::from_secs(5);
    let call = |host: &Host, args: &serde_json::Value| {
        let out = host.call("search-conversations", args.clone()).unwrap();
        (engine_keys(&out.data), out)
    };

    // Per case: DuckDB's keys, local index, plain ILIKE, then the archive per phase.
    struct Row {
        expected: Vec<(String, String)>,
        local: Stats,
        local_same: bool,
        duckdb: Stats,
        plain: Stats,
        plain_same: bool,
        archive: Vec<(Stats, bool)>,
    }
    let mut rows = Vec::new();
    for (label, term, role) in CASES {
        eprintln!("case {label} (local, DuckDB, plain ILIKE) …");
        let args = json!({"term": term, "role": role, "limit": LIMIT});
        let (duckdb, expected) = measure(5, budget, || {
            duckdb_keys(&conn, term, *role, LIMIT).unwrap()
        });
        let (local_stats, (local_keys, _)) = measure(runs, budget, || call(&local, &args));
        let (plain, plain_keys) = measure(5, budget, || plain_ilike(&mut pg, term, *role).unwrap());
        rows.push(Row {
            local_same: local_keys == expected,
            plain_same: plain_keys == expected,
            expected,
            local: local_stats,
            duckdb,
            plain,
            archive: Vec::new(),
        });
    }

    let phases = [
        "as pushed",
        "pending lists full (every partition)",
        "after VACUUM (pending lists empty)",
    ];
    let mut pending_seen = Vec::new();
    for (p, phase) in phases.iter().enumerate() {
        match p {
            1 => {
                eprintln!("filling the pending lists …");
                if let Err(e) = fill_pending(&mut pg, fill_kb) {
                    let e = match e.downcast_ref::<postgres::Error>() {
                        Some(pe) => format!("{pe:?}"),
                        None => format!("{e:#}"),
                    };
                    println!("pending lists not filled ({e}): phase measured as it stands\n");
                }
            }
            2 => {
                // Two calls: several statements in one run as one transaction, which
                // VACUUM refuses.
                pg.batch_execute(&format!(
                    "DELETE FROM {SCHEMA}.messages WHERE machine = '{FILLER}'"
                ))?;
                pg.batch_execute(&format!("VACUUM ANALYZE {SCHEMA}.messages"))?;
            }
            _ => {}
        }
        let (pages, tuples) = pending(&mut pg)?;
        pending_seen.push(format!(
            "{phase}: {pages} pending pages ({}), {tuples} pending tuples",
            fmt_bytes(u64::try_from(pages).unwrap_or(0) * 8192)
        ));
        for ((label, term, role), row) in CASES.iter().zip(rows.iter_mut()) {
            eprintln!("case {label} (archive, {phase}) …");
            let args = json!({"term": term, "role": role, "limit": LIMIT});
            let (stats, (keys, _)) = measure(runs, budget, || call(&archive, &args));
            row.archive.push((stats, keys == row.expected));
            if explaining || (p == 0 && stats.median > Duration::from_millis(20)) {
                println!(
                    "EXPLAIN ANALYZE, {label}, {phase} (median {}):\n```\n{}\n```\n",
                    fmt_dur(stats.median),
                    explain(&mut pg, term, *role)?
                );
            }
        }
    }
    if p_filler_left(&mut pg)? {
        bail!("filler rows left in the archive");
    }

    let mut header = vec!["case".to_owned(), "rows".to_owned()];
    for phase in phases {
        header.push(format!("archive p50, {phase}"));
        header.push("p95".into());
    }
    header.extend(
        [
            "local index p50",
            "p95",
            "plain `ILIKE` on PostgreSQL p50",
            "DuckDB `ILIKE` p50",
            "same rows: archive / local / plain `ILIKE`",
        ]
        .map(str::to_owned),
    );
    let mut table = Vec::new();
    let mut all_same = true;
    for ((label, _, _), row) in CASES.iter().zip(&rows) {
        let mut cells = vec![(*label).to_owned(), row.expected.len().to_string()];
        for (s, _) in &row.archive {
            cells.push(fmt_dur(s.median));
            cells.push(fmt_dur(s.p95));
        }
        let yes = |b: bool| if b { "yes" } else { "**no**" };
        let archive_same = row.archive.iter().all(|(_, same)| *same);
        all_same &= archive_same && row.local_same;
        cells.extend([
            fmt_dur(row.local.median),
            fmt_dur(row.local.p95),
            fmt_dur(row.plain.median),
            fmt_dur(row.duckdb.median),
            format!(
                "{} / {} / {}",
                yes(archive_same),
                yes(row.local_same),
                yes(row.plain_same)
            ),
        ]);
        table.push(cells);
    }
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    common::table(&header, &table);
    println!(
        "runs: archive and local index {runs} timed runs or 5 s after one warm-up, plain \
         `ILIKE` and DuckDB 5; limit {LIMIT}; gin_pending_list_limit {TRIGRAM_PENDING_LIST_KB} \
         kB per partition, filled to {fill_kb} kB; load average {}.\n",
        common::loadavg()
    );
    for line in pending_seen {
        println!("- {line}");
    }
    println!();
    drop(server);
    if !all_same {
        bail!("a path returned rows different from DuckDB's");
    }
    Ok(())
}

/// Whether filler rows are still in the archive (they must all be gone).
fn p_filler_left(c: &mut postgres::Client) -> Result<bool> {
    Ok(c.query_one(
        &format!("SELECT count(*) FROM {SCHEMA}.messages WHERE machine = '{FILLER}'"),
        &[],
    )?
    .get::<_, i64>(0)
        > 0)
}
