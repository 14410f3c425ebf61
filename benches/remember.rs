//! The save → recall loop (issue 17) at scale.
//!
//! 1. `memo-save` over MCP: `skills serve` on stdio (JSON-RPC written by hand, as in
//!    `benches/serve.rs`) over a copy of the 100k-memory store, each save a new memory
//!    with its embedding; then the next `memo-search` call, which must return the saved
//!    memory first (checked), and a second, steady-state call.
//! 2. `recall` through [`Host::call`] over the 1M-message conversation store (with its
//!    search index and embeddings) plus the 100k memories, next to each of its source
//!    skills alone.
//!
//! Environment: `BENCH_MEMORIES` (default 100,000), `BENCH_MESSAGES` (default
//! 1,000,000), `BENCH_SEED`, `BENCH_SAVES` (default 30), `BENCH_RUNS` (recall calls per
//! case, default 20), `BENCH_PARTS` (`save,recall` by default), `BENCH_DIR`; the model
//! from `$SKILLS_MODEL_DIR` (default `~/.cache/skills/model`, `scripts/fetch-model`).
#![allow(clippy::print_stdout, clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};
use common::session::{tool_named, Session};
use common::{fmt_bytes, fmt_dur, measure, Stats};
use serde_json::{json, Value};
use skills::bench::gen::{self, Spec};
use skills::embed::Embedder;
use skills::engines::Context;
use skills::host::Host;
use skills::stores::conversations::embeddings::UnitSpec;
use skills::stores::conversations::ConversationStore;
use skills::stores::StorePaths;

const RECALL_QUESTIONS: [&str; 3] = [
    "how do we handle serde errors in the tokio runtime",
    "why does the build fail to link",
    "what did we decide about the database migration",
];

fn main() -> Result<()> {
    if std::env::args().any(|a| a == "--list") {
        return Ok(());
    }
    let memories = common::env_usize("BENCH_MEMORIES", 100_000);
    let messages = common::env_usize("BENCH_MESSAGES", 1_000_000);
    let seed = common::env_usize("BENCH_SEED", 0x5EED) as u64;
    let parts = std::env::var("BENCH_PARTS").unwrap_or_else(|_| "save,recall".to_owned());
    let embedder = match Embedder::load_default() {
        Ok(e) => Arc::new(e),
        Err(e) => {
            println!("## save → recall\n\nskipped: {e}\n");
            return Ok(());
        }
    };
    println!("## save → recall\n\nmachine: {}\n", common::machine());
    let memo_dir = common::stores::memo_store(memories, seed, &embedder)?;
    println!(
        "memories: {}\n",
        std::fs::read_to_string(memo_dir.join("complete"))?
    );
    if parts.contains("save") {
        save_over_mcp(&memo_dir, memories)?;
    }
    if parts.contains("recall") {
        let conversations = conversation_store(messages, seed, &embedder)?;
        recall(&conversations, &memo_dir, messages, memories, embedder)?;
    }
    Ok(())
}

/// Part 1: saves over MCP into a scratch copy of the memo store, each followed by the
/// memo-search that must find it.
fn save_over_mcp(memo_dir: &Path, memories: usize) -> Result<()> {
    let saves = common::env_usize("BENCH_SAVES", 30);
    let scratch = common::bench_dir().join("remember-scratch");
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch)?;
    std::fs::copy(
        memo_dir.join("memories.sqlite"),
        scratch.join("memories.sqlite"),
    )?;
    let mut s = Session::start(&scratch, &[])?;
    let tools = s.handshake()?;
    let save_tool = tool_named(&tools, "memo_save").context("no memo_save tool")?;
    let search_tool = tool_named(&tools, "memo_search").context("no memo_search tool")?;
    // Warm: the model and the search index are loaded once per server.
    let t = Instant::now();
    s.call(&search_tool, json!({"query": "serde errors"}))?;
    let first_search = t.elapsed();

    let (mut save_t, mut next_t, mut steady_t) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..saves {
        // A word no generated memory holds, so the saved memory must rank first.
        let word = format!("zebrafinch{i:04}x{}", std::process::id());
        let args = json!({
            "title": format!("Decision {i}: pin the {word} parser"),
            "body": format!("We pin the {word} parser to 2.x because 3.0 changed error spans; revisit after the tokio upgrade. Run {i}."),
            "type": "decision",
            "tags": ["bench", "parser"],
            "files_modified": ["src/parser.rs"],
            "source": "bench",
        });
        let t = Instant::now();
        let saved = s.call(&save_tool, args)?;
        save_t.push(t.elapsed());
        let id = saved["structuredContent"]["id"]
            .as_str()
            .context("memo_save returned no id")?
            .to_owned();
        let query = json!({"query": format!("{word} parser"), "limit": 5});
        let t = Instant::now();
        let found = s.call(&search_tool, query.clone())?;
        next_t.push(t.elapsed());
        let top = found["structuredContent"]["hits"][0]["id"].as_str();
        if top != Some(id.as_str()) {
            bail!("memo-search after save {i} did not rank {id} first: {found}");
        }
        let t = Instant::now();
        s.call(&search_tool, query)?;
        steady_t.push(t.elapsed());
    }
    let peak = s.peak_rss();
    s.close();
    let row = |label: &str, st: Stats| {
        vec![
            label.to_owned(),
            st.runs.to_string(),
            fmt_dur(st.median),
            fmt_dur(st.p95),
        ]
    };
    println!("### memo-save over MCP (stdio) into {memories} memories\n");
    common::table(
        &["tools/call", "runs", "median", "p95"],
        &[
            row(
                "memo_save (new memory, embedding included)",
                Stats::of(save_t),
            ),
            row(
                "memo_search right after the save (finds it first)",
                Stats::of(next_t),
            ),
            row("memo_search again (steady state)", Stats::of(steady_t)),
        ],
    );
    println!(
        "first memo_search of the server (loads model and index): {}; server peak RSS {}\n",
        fmt_dur(first_search),
        fmt_bytes(peak)
    );
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(())
}

/// The `semantic-<n>-<seed>` conversation store of `benches/semantic.rs`, with search
/// index and embeddings; built when missing (fill, index, embed: several minutes at
/// 1M).
fn conversation_store(n: usize, seed: u64, embedder: &Arc<Embedder>) -> Result<StorePaths> {
    let dir = common::bench_dir().join(format!("semantic-{n}-{seed:x}"));
    let paths = StorePaths::in_dir(&dir);
    if !dir.join("complete").exists() {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        let store = ConversationStore::open_rw(&paths.conversations)?;
        gen::fill_store(&store, Spec { messages: n, seed }, 50_000)?;
        store.close()?;
        std::fs::write(dir.join("complete"), b"")?;
    }
    if !dir
        .join("conversations.embeddings")
        .join("MANIFEST")
        .exists()
    {
        eprintln!("embedding {n} messages …");
        let mut store = ConversationStore::open_rw(&paths.conversations)?;
        store.embed_with(embedder.clone(), UnitSpec::DEFAULT)?;
        store.close_with(&mut |_, _| {})?;
    }
    Ok(paths)
}

/// Part 2: `recall` and its sources through `Host::call`.
fn recall(
    conversations: &StorePaths,
    memo_dir: &Path,
    messages: usize,
    memories: usize,
    embedder: Arc<Embedder>,
) -> Result<()> {
    let runs = common::env_usize("BENCH_RUNS", 20);
    let paths = StorePaths {
        conversations: conversations.conversations.clone(),
        memories: StorePaths::in_dir(memo_dir).memories,
    };
    let skills_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("skills");
    let host = Host::load(
        &skills_dir,
        Context::new(paths).with_embedder(Some(embedder)),
    );
    if host.get("recall").is_none() {
        bail!("skill `recall` did not load: {:?}", host.diagnostics());
    }
    let mut rows = Vec::new();
    let mut all = Vec::new();
    for q in RECALL_QUESTIONS {
        let cases: [(&str, Value); 4] = [
            ("recall", json!({"question": q})),
            (
                "memo-search",
                json!({"query": q, "limit": 10, "body_chars": -1, "include_superseded": true}),
            ),
            (
                "semantic-search",
                json!({"query": q, "limit": 10, "mode": "hybrid"}),
            ),
            ("search-conversations", json!({"term": q, "limit": 10})),
        ];
        for (skill, args) in cases {
            let (st, out) = measure(runs, Duration::from_secs(20), || {
                host.call(skill, args.clone()).map_err(|e| e.to_string())
            });
            let out = out.map_err(|e| anyhow::anyhow!("{skill}: {e}"))?;
            let label = if args.get("include_superseded").is_some() {
                format!("{skill} (include_superseded)")
            } else {
                skill.to_owned()
            };
            let size = if skill == "recall" {
                all.push(st.median);
                format!("{} items, {} tokens", out.data["count"], out.data["tokens"])
            } else {
                let rows = out.data["hits"]
                    .as_array()
                    .or(out.data["rows"].as_array())
                    .map_or(0, Vec::len);
                format!("{rows} rows")
            };
            rows.push(vec![
                format!("`{q}`"),
                label,
                size,
                fmt_dur(st.median),
                fmt_dur(st.p95),
            ]);
        }
    }
    println!("### recall at {messages} messages + {memories} memories (Host::call)\n");
    common::table(&["question", "skill", "answer", "median", "p95"], &rows);
    let st = Stats::of(all);
    println!(
        "recall: median of the per-question medians {}; {runs} timed calls per case after one \
         warm-up. recall calls the three source rows below it, side by side, and fuses them.\n",
        fmt_dur(st.median)
    );
    Ok(())
}
