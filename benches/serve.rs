//! `skills serve` over stdio, measured from outside like an MCP client: process start
//! → `initialize` → `notifications/initialized` → first `tools/list` answer, and the
//! round trip of `tools/call` on an open session. Newline-delimited JSON-RPC written
//! by hand, so the figure includes nothing but the server.
//!
//! Skips with a note when the binary has no `serve` subcommand yet.
//!
//! Environment: `BENCH_SERVE_STARTS` (default 20), `BENCH_SERVE_CALLS` (default 200),
//! `BENCH_SERVE_MESSAGES` (store size for the calls, default 20,000), `BENCH_DIR`.
#![allow(clippy::print_stdout, clippy::unwrap_used)]

mod common;

use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context as _, Result};
use common::session::{Session, BIN};
use common::{fmt_bytes, fmt_dur, Stats};
use serde_json::{json, Value};
use skills::bench::gen::{self, Spec};
use skills::stores::conversations::ConversationStore;

fn main() -> Result<()> {
    if std::env::args().any(|a| a == "--list") {
        return Ok(());
    }
    let has_serve = Command::new(BIN)
        .args(["serve", "--help"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !has_serve {
        println!(
            "## skills serve\n\nskipped: this build of `skills` has no `serve` subcommand yet\n"
        );
        return Ok(());
    }
    let starts = common::env_usize("BENCH_SERVE_STARTS", 20);
    let calls = common::env_usize("BENCH_SERVE_CALLS", 200);
    let messages = common::env_usize("BENCH_SERVE_MESSAGES", 20_000);
    let seed = common::env_usize("BENCH_SEED", 0x5EED) as u64;
    let data = common::bench_dir().join(format!("serve-{messages}-{seed:x}"));
    if !data.join("complete").exists() {
        let _ = std::fs::remove_dir_all(&data);
        let store = ConversationStore::open_rw(&data.join("conversations.duckdb"))?;
        gen::fill_store(&store, Spec { messages, seed }, 50_000)?;
        drop(store);
        std::fs::write(data.join("complete"), "")?;
    }

    let mut first_list = Vec::new();
    let mut tools = Value::Null;
    for _ in 0..starts.max(1) {
        let t = Instant::now();
        let mut s = Session::start(&data, &[])?;
        tools = s.handshake()?;
        first_list.push(t.elapsed());
        s.close();
    }
    let tool = tools["tools"]
        .as_array()
        .and_then(|ts| {
            ts.iter()
                .filter_map(|t| t["name"].as_str())
                .find(|n| n.contains("search_conversations") || n.contains("search-conversations"))
        })
        .context("no search-conversations tool in tools/list")?
        .to_owned();
    let n_tools = tools["tools"].as_array().map_or(0, Vec::len);

    let mut s = Session::start(&data, &[])?;
    s.handshake()?;
    let mut rows = Vec::new();
    for (label, args) in [
        ("questions mode", json!({"term": "", "role": "user"})),
        ("term `serde`", json!({"term": "serde"})),
    ] {
        let mut samples = Vec::new();
        for _ in 0..calls.max(1) {
            let t = Instant::now();
            let result = s.request("tools/call", json!({"name": tool, "arguments": args}))?;
            samples.push(t.elapsed());
            if result.get("isError") == Some(&json!(true)) {
                bail!("tool call failed: {result}");
            }
        }
        let st = Stats::of(samples);
        rows.push(vec![
            format!("tools/call `{tool}` {label}"),
            st.runs.to_string(),
            fmt_dur(st.median),
            fmt_dur(st.p95),
        ]);
    }
    let peak = s.peak_rss();
    s.close();
    let st = Stats::of(first_list);
    rows.insert(
        0,
        vec![
            format!("process start → first tools/list answer ({n_tools} tools)"),
            st.runs.to_string(),
            fmt_dur(st.median),
            fmt_dur(st.p95),
        ],
    );
    println!("## skills serve (stdio) over a {messages}-message store\n");
    println!("machine: {}\n", common::machine());
    common::table(&["measure", "runs", "median", "p95"], &rows);
    println!("server peak RSS after the calls: {}\n", fmt_bytes(peak));
    Ok(())
}
