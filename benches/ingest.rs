//! Ingest throughput: a generated Claude Code tree (`projects/<dir>/<session>.jsonl`)
//! imported with [`skills::ingest::ingest_paths`] into a fresh on-disk store, as
//! `skills ingest` does (batched transactions, parsing on a second thread); messages/s, MB/s, store size on disk and peak RSS.
//! Each run imports the tree twice, alternating: secrets redacted before storing
//! (`skills ingest`'s default, [`skills::redact::at_store`]) and stored as written
//! (`--keep-secrets`), so the table shows what redaction at store costs.
//!
//! Environment: `BENCH_INGEST_MESSAGES` (default 100,000), `BENCH_SEED`,
//! `BENCH_INGEST_RUNS` (default 3), `BENCH_DIR`.
#![allow(clippy::print_stdout, clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use common::{fmt_bytes, fmt_dur, peak_rss, reset_peak, Stats};
use skills::bench::gen::{self, Spec};
use skills::stores::conversations::ConversationStore;

fn main() -> Result<()> {
    if std::env::args().any(|a| a == "--list") {
        return Ok(());
    }
    let messages = common::env_usize("BENCH_INGEST_MESSAGES", 100_000);
    let seed = common::env_usize("BENCH_SEED", 0x5EED) as u64;
    let runs = common::env_usize("BENCH_INGEST_RUNS", 3);
    let dir = common::bench_dir().join(format!("ingest-{messages}-{seed:x}"));
    let tree = dir.join("tree");
    let done = dir.join("complete");
    if !done.exists() {
        let _ = std::fs::remove_dir_all(&dir);
        eprintln!(
            "writing a Claude Code tree of {messages} messages into {} …",
            tree.display()
        );
        let g = gen::write_claude_code_tree(&tree, Spec { messages, seed })?;
        std::fs::write(
            &done,
            format!(
                "{} {} {} {}",
                g.messages, g.conversations, g.text_bytes, g.file_bytes
            ),
        )?;
    }
    let meta: Vec<u64> = std::fs::read_to_string(&done)?
        .split_whitespace()
        .filter_map(|v| v.parse().ok())
        .collect();
    let [n, files, text_bytes, file_bytes] = meta[..] else {
        bail!("unreadable `{}`", done.display());
    };

    // Per mode (redacted at store, kept): samples, store size, peak RSS, secrets.
    let modes = [
        ("redacted before storing (default)", true),
        ("--keep-secrets", false),
    ];
    let mut samples = [Vec::new(), Vec::new()];
    let mut store_bytes = [0; 2];
    let mut peak = [0; 2];
    let mut secrets = [0; 2];
    for run in 0..runs.max(1) {
        for (m, (name, redact)) in modes.iter().enumerate() {
            let store_dir = dir.join(format!("store-{run}-{m}"));
            let _ = std::fs::remove_dir_all(&store_dir);
            reset_peak();
            let t = Instant::now();
            let store = ConversationStore::open_rw(&store_dir.join("conversations.duckdb"))?;
            let options = skills::ingest::IngestOptions {
                redact: *redact,
                ..Default::default()
            };
            let summary = skills::ingest::ingest_paths_with(
                &store,
                std::slice::from_ref(&tree),
                options,
                &mut |_, _| {},
            );
            drop(store);
            let elapsed = t.elapsed();
            peak[m] = peak[m].max(peak_rss());
            if !summary.is_clean() || summary.messages_added as u64 != n {
                bail!("ingest was not clean: {summary}");
            }
            secrets[m] = summary.secrets_redacted;
            store_bytes[m] = common::dir_bytes(&store_dir);
            let _ = std::fs::remove_dir_all(&store_dir);
            eprintln!("run {run}, {name}: {}", fmt_dur(elapsed));
            samples[m].push(elapsed);
        }
    }
    // Parsing alone (no store), to split the time between importer and store.
    // And redaction alone (the detectors over every message's text, as at store).
    let t = Instant::now();
    let mut parsed = 0usize;
    let mut paths = Vec::new();
    collect_jsonl(&tree, &mut paths);
    let mut texts = Vec::with_capacity(n as usize);
    for path in &paths {
        let import = skills::ingest::import_file(path)?;
        parsed += import.messages.len();
        texts.extend(import.messages.into_iter().map(|m| m.content));
    }
    let parse_time = t.elapsed();
    let t = Instant::now();
    let replaced: usize = texts
        .iter_mut()
        .map(skills::redact::at_store::redact_in_place)
        .sum();
    let redact_time = t.elapsed();
    if parsed as u64 != n {
        bail!("parsed {parsed} messages, expected {n}");
    }
    let per_sec = |x: u64, d: Duration| x as f64 / d.as_secs_f64();
    let stats = samples.map(Stats::of);
    println!("## ingest (Claude Code JSONL → DuckDB) at {n} messages\n");
    println!("machine: {}\n", common::machine());
    common::table(
        &[
            "secrets",
            "messages",
            "session files",
            "JSONL",
            "text",
            "median",
            "p95",
            "messages/s (median)",
            "JSONL MB/s",
            "text MB/s",
            "store on disk",
            "peak RSS",
            "replaced",
        ],
        &modes
            .iter()
            .enumerate()
            .map(|(m, (name, _))| {
                let s = &stats[m];
                vec![
                    (*name).to_owned(),
                    n.to_string(),
                    files.to_string(),
                    fmt_bytes(file_bytes),
                    fmt_bytes(text_bytes),
                    fmt_dur(s.median),
                    fmt_dur(s.p95),
                    format!("{:.0}", per_sec(n, s.median)),
                    format!("{:.1}", per_sec(file_bytes, s.median) / 1e6),
                    format!("{:.1}", per_sec(text_bytes, s.median) / 1e6),
                    fmt_bytes(store_bytes[m]),
                    fmt_bytes(peak[m]),
                    secrets[m].to_string(),
                ]
            })
            .collect::<Vec<_>>(),
    );
    println!(
        "redaction at store: {:+.1} % of the median time with `--keep-secrets`.\n",
        (stats[0].median.as_secs_f64() / stats[1].median.as_secs_f64() - 1.0) * 100.0
    );
    println!(
        "runs: {} (each into a fresh store file; files are stored in batched transactions \
         while a second thread parses). Parsing alone, on one thread (`import_file` on every \
         file, nothing stored): {} = {:.0} messages/s, {:.1} MB/s of JSONL. Redaction alone, \
         on one thread (the detectors over every message's text): {} = {:.0} messages/s, \
         {replaced} replaced.\n",
        stats[0].runs,
        fmt_dur(parse_time),
        per_sec(n, parse_time),
        per_sec(file_bytes, parse_time) / 1e6,
        fmt_dur(redact_time),
        per_sec(n, redact_time),
    );
    Ok(())
}

fn collect_jsonl(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.filter_map(Result::ok) {
        let path = e.path();
        if path.is_dir() {
            collect_jsonl(&path, out);
        } else if path.extension().is_some_and(|x| x == "jsonl") {
            out.push(path);
        }
    }
}
