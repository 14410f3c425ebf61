//! semantic-search quality on LoCoMo (dev half, `$SKILLS_CORPUS_DIR/locomo/`, else
//! `../shared/corpus/locomo/`): each LoCoMo session becomes one conversation of a
//! generic JSON Lines transcript (speaker A as `user`, speaker B as `assistant`, the
//! session's date as the time), imported and embedded by the real ingest, one store
//! per LoCoMo conversation (per-conversation haystack); every question is one
//! `Host::call("semantic-search", …)`.
//!
//! Figures per (unit, mode): turn R@5 / R@15 (an evidence turn is the shown
//! `message_id` of a row in the top k) and, looser, window R@5 (an evidence turn lies
//! in a top-5 row's window); session R@5 / R@15 (an evidence session is among the
//! first k distinct conversations of the rows, of a `limit: 50` call); MRR of the
//! first evidence turn. Questions whose evidence names no existing turn are left out.
//! Also the recall@15 of the 1-bit first pass against the exact one (same question,
//! `Embeddings::search_with`, forced on these small stores, which the default keeps
//! exact), at the default oversampling and at a tight one.
//!
//! Run: `cargo bench --bench locomo_semantic` (`BENCH_UNITS="1:1:0,3:2:0"` as
//! window:stride:title to choose the units measured).
#![allow(clippy::print_stdout, clippy::unwrap_used)]

mod common;

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, Result};
use serde_json::{json, Value};
use skills::bench::locomo;
use skills::embed::Embedder;
use skills::engines::Context;
use skills::runtime::host::Host;
use skills::stores::conversations::embeddings::{self, Embeddings, Filter, FirstPass, UnitSpec};
use skills::stores::conversations::ConversationStore;
use skills::stores::StorePaths;

/// "1:56 pm on 8 May, 2023" → RFC 3339.
fn session_time(s: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    chrono::NaiveDateTime::parse_from_str(s.trim(), "%I:%M %p on %d %B, %Y")
        .ok()
        .map(|t| t.and_utc())
}

/// "D1:3" (and the irregular "D:11:26", "D30:05") → (session, turn).
fn parse_dia(id: &str) -> Option<(u32, u32)> {
    let t = id.trim().trim_start_matches('D').trim_start_matches(':');
    let (s, i) = t.split_once(':')?;
    Some((s.trim().parse().ok()?, i.trim().parse().ok()?))
}

struct Question {
    query: String,
    /// Evidence turns as stored message ids ("D1:3").
    turns: HashSet<String>,
    /// Evidence sessions as conversation ids.
    sessions: HashSet<String>,
}

/// Writes sample `sample`'s sessions as one generic JSONL file; returns its questions.
fn convert(sample: &Value, out: &Path) -> Result<Vec<Question>> {
    let id = sample["sample_id"].as_str().unwrap_or("conv");
    let conv = &sample["conversation"];
    let a = conv["speaker_a"].as_str().unwrap_or("");
    let mut f = std::io::BufWriter::new(std::fs::File::create(out)?);
    let mut known: HashSet<(u32, u32)> = HashSet::new();
    for n in 1..=100u32 {
        let Some(turns) = conv.get(format!("session_{n}")).and_then(Value::as_array) else {
            continue;
        };
        let start = conv
            .get(format!("session_{n}_date_time"))
            .and_then(Value::as_str)
            .and_then(session_time)
            .unwrap_or_default();
        for (i, t) in turns.iter().enumerate() {
            let dia = t["dia_id"].as_str().unwrap_or("");
            if let Some(k) = parse_dia(dia) {
                known.insert(k);
            }
            let mut text = t["text"].as_str().unwrap_or("").to_owned();
            if let Some(c) = t.get("blip_caption").and_then(Value::as_str) {
                text.push_str(&format!(" [shares a photo: {c}]"));
            }
            let role = if t["speaker"].as_str() == Some(a) {
                "user"
            } else {
                "assistant"
            };
            let at = start + chrono::Duration::seconds(i as i64 * 30);
            let (s, k) = parse_dia(dia).unwrap_or((n, i as u32 + 1));
            writeln!(
                f,
                "{}",
                json!({
                    "conversation_id": format!("{id}/session_{n}"),
                    "id": format!("D{s}:{k}"),
                    "role": role,
                    "content": format!("{}: {text}", t["speaker"].as_str().unwrap_or("")),
                    "timestamp": at.to_rfc3339(),
                    "title": format!("{a} and {} — {}", conv["speaker_b"].as_str().unwrap_or(""),
                        conv.get(format!("session_{n}_date_time")).and_then(Value::as_str).unwrap_or("")),
                })
            )?;
        }
    }
    f.flush()?;
    let mut qs = Vec::new();
    for q in sample["qa"].as_array().into_iter().flatten() {
        let mut turns = HashSet::new();
        let mut sessions = HashSet::new();
        for e in q["evidence"].as_array().into_iter().flatten() {
            for part in e.as_str().unwrap_or("").split(';') {
                if let Some((s, i)) = parse_dia(part) {
                    if known.contains(&(s, i)) {
                        turns.insert(format!("D{s}:{i}"));
                        sessions.insert(format!("{id}/session_{s}"));
                    }
                }
            }
        }
        if !turns.is_empty() {
            qs.push(Question {
                query: q["question"].as_str().unwrap_or("").to_owned(),
                turns,
                sessions,
            });
        }
    }
    Ok(qs)
}

#[derive(Default)]
struct Tally {
    n: usize,
    turn5: usize,
    turn15: usize,
    window5: usize,
    sess5: usize,
    sess15: usize,
    mrr: f64,
}

fn main() -> Result<()> {
    if std::env::args().any(|a| a == "--list") {
        return Ok(());
    }
    let Some(file) = locomo::corpus_file() else {
        println!("## semantic-search on LoCoMo\n\nskipped: no locomo/locomo-dev.json under $SKILLS_CORPUS_DIR or ../shared/corpus\n");
        return Ok(());
    };
    let embedder = match Embedder::load_default() {
        Ok(e) => Arc::new(e),
        Err(e) => {
            println!("## semantic-search on LoCoMo\n\nskipped: {e}\n");
            return Ok(());
        }
    };
    let data: Vec<Value> = serde_json::from_slice(&std::fs::read(&file)?)?;
    let units: Vec<UnitSpec> = std::env::var("BENCH_UNITS")
        .unwrap_or_else(|_| "1:1:0,3:2:0,3:3:0,5:3:0,3:2:1".into())
        .split(',')
        .filter_map(|u| {
            let p: Vec<u32> = u.split(':').filter_map(|x| x.parse().ok()).collect();
            (p.len() == 3).then(|| UnitSpec {
                window: p[0],
                stride: p[1],
                title: p[2] == 1,
            })
        })
        .collect();
    let skills_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("skills");
    let tmp = tempfile::tempdir()?;
    let mut converted = Vec::new();
    for sample in &data {
        let id = sample["sample_id"].as_str().unwrap_or("conv").to_owned();
        let path = tmp.path().join(format!("{id}.jsonl"));
        let qs = convert(sample, &path)?;
        converted.push((id, path, qs));
    }
    let questions: usize = converted.iter().map(|c| c.2.len()).sum();
    println!("## semantic-search on LoCoMo (dev half: {} conversations, {questions} questions with evidence)\n", converted.len());
    println!(
        "model `{}`; per-conversation haystack; k = 5 / 15\n",
        embedder.name()
    );
    let mut rows = Vec::new();
    // (found, wanted) of the 1-bit pass's top 15 against the exact one, per pass.
    let fast_passes = [
        FirstPass::Bits {
            min_units: 0,
            oversample: embeddings::OVERSAMPLE,
            floor: embeddings::CANDIDATES_FLOOR,
        },
        FirstPass::Bits {
            min_units: 0,
            oversample: 4,
            floor: 0,
        },
        FirstPass::Bits {
            min_units: 0,
            oversample: 2,
            floor: 0,
        },
    ];
    let mut fast_recall = vec![(0usize, 0usize); fast_passes.len()];
    let stop = skills::cancel::Cancel::new();
    for unit in &units {
        let mut tallies: HashMap<&str, Tally> = HashMap::new();
        for (id, path, qs) in &converted {
            let dir = tmp.path().join(format!(
                "{id}-{}-{}-{}",
                unit.window, unit.stride, unit.title
            ));
            let paths = StorePaths::in_dir(&dir);
            let mut store = ConversationStore::open_rw(&paths.conversations)?;
            store.embed_with(embedder.clone(), *unit)?;
            let summary =
                skills::ingest::ingest_paths(&store, std::slice::from_ref(path), &mut |_, _| {});
            anyhow::ensure!(summary.faults.is_empty(), "faults: {:?}", summary.faults);
            let closed = store.close_with(&mut |_, _| {})?;
            closed
                .embeddings
                .context("no embeddings")?
                .map_err(anyhow::Error::msg)?;
            if unit.window == 1 && unit.stride == 1 && !unit.title {
                let e = Embeddings::open(&paths.conversations)
                    .map_err(|e| anyhow::anyhow!("embeddings: {e}"))?;
                let damaged = |_| anyhow::anyhow!("damaged embeddings");
                for q in qs {
                    let v = embedder.embed(&q.query);
                    let f = Filter::default();
                    let exact = e
                        .search_with(&v, 15, &f, -1.0, 2, &stop, FirstPass::Exact)
                        .map_err(damaged)?;
                    let key = |h: &embeddings::UnitHit| h.messages[0].message_id.clone();
                    let want: HashSet<String> = exact.iter().map(key).collect();
                    for (pass, tally) in fast_passes.iter().zip(&mut fast_recall) {
                        let got = e
                            .search_with(&v, 15, &f, -1.0, 2, &stop, *pass)
                            .map_err(damaged)?;
                        tally.0 += got.iter().filter(|h| want.contains(&key(h))).count();
                        tally.1 += want.len();
                    }
                }
            }
            let host = Host::load(
                &skills_dir,
                Context::new(paths).with_embedder(Some(embedder.clone())),
            );
            for mode in ["semantic", "hybrid"] {
                let t = tallies.entry(mode).or_default();
                for q in qs {
                    let out = host
                        .call(
                            "semantic-search",
                            json!({"query": q.query, "limit": 50, "mode": mode}),
                        )
                        .map_err(|e| anyhow::anyhow!("{e}"))?;
                    let rows = out.data["rows"].as_array().cloned().unwrap_or_default();
                    let shown: Vec<&str> = rows
                        .iter()
                        .map(|r| r["message_id"].as_str().unwrap_or(""))
                        .collect();
                    t.n += 1;
                    let first = shown.iter().position(|m| q.turns.contains(*m));
                    t.turn5 += usize::from(first.is_some_and(|p| p < 5));
                    t.turn15 += usize::from(first.is_some_and(|p| p < 15));
                    if let Some(p) = first {
                        t.mrr += 1.0 / (p as f64 + 1.0);
                    }
                    // Window hit: an evidence turn between a top-5 row's first and last ids.
                    let in_window = rows.iter().take(5).any(|r| {
                        let (a, b) = (
                            r["first_message_id"].as_str().unwrap_or(""),
                            r["last_message_id"].as_str().unwrap_or(""),
                        );
                        q.turns.iter().any(|e| within(e, a, b))
                    });
                    t.window5 += usize::from(in_window);
                    let mut sessions: Vec<&str> = Vec::new();
                    for r in &rows {
                        let c = r["conversation_id"].as_str().unwrap_or("");
                        if !sessions.contains(&c) {
                            sessions.push(c);
                        }
                    }
                    let sp = sessions.iter().position(|s| q.sessions.contains(*s));
                    t.sess5 += usize::from(sp.is_some_and(|p| p < 5));
                    t.sess15 += usize::from(sp.is_some_and(|p| p < 15));
                }
            }
        }
        for mode in ["semantic", "hybrid"] {
            let t = &tallies[mode];
            let pct = |x: usize| format!("{:.1} %", 100.0 * x as f64 / t.n.max(1) as f64);
            rows.push(vec![
                format!(
                    "window {} stride {}{}",
                    unit.window,
                    unit.stride,
                    if unit.title { " + title" } else { "" }
                ),
                mode.to_owned(),
                pct(t.turn5),
                pct(t.turn15),
                pct(t.window5),
                pct(t.sess5),
                pct(t.sess15),
                format!("{:.3}", t.mrr / t.n.max(1) as f64),
            ]);
        }
    }
    common::table(
        &[
            "unit",
            "mode",
            "turn R@5",
            "turn R@15",
            "window R@5",
            "session R@5",
            "session R@15",
            "turn MRR",
        ],
        &rows,
    );
    if fast_recall[0].1 > 0 {
        println!("\n1-bit first pass vs exact (window 1 stride 1, every question, n = 15):\n");
        for (pass, (found, wanted)) in fast_passes.iter().zip(&fast_recall) {
            println!(
                "- {} candidates per slice: recall@15 vs exact {:.4}",
                pass.candidates(15).unwrap_or(0),
                *found as f64 / (*wanted).max(1) as f64
            );
        }
        println!();
    }
    Ok(())
}

/// True when dia id `e` ("D3:7") lies between `a` and `b` of the same session.
fn within(e: &str, a: &str, b: &str) -> bool {
    match (parse_dia(e), parse_dia(a), parse_dia(b)) {
        (Some((s, i)), Some((sa, ia)), Some((sb, ib))) => s == sa && s == sb && ia <= i && i <= ib,
        _ => false,
    }
}
