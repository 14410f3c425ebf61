//! semantic-search quality on LoCoMo (dev half, `$SKILLS_CORPUS_DIR/locomo/`, else
//! `../shared/corpus/locomo/`): each LoCoMo session becomes one conversation of a
//! generic JSON Lines transcript (speaker A as `user`, speaker B as `assistant`, the
//! session's date as the time), imported and embedded by the real ingest, one store
//! per LoCoMo conversation (per-conversation haystack); every question is one
//! `Host::call("semantic-search", …)`.
//!
//! The headline is the *client protocol*, what an agent receives: one call with the
//! variant's arguments and `limit: 5`; client turn R@5 counts a question when one of
//! those five rows is an evidence turn (its shown `message_id`), client session R@5
//! when one of them is in an evidence session. Beside it, the *ranked-session
//! protocol* of one `limit: 50` call: turn R@5 / R@15 (an evidence turn is the shown
//! `message_id` of a row in the top k) and, looser, window R@5 (an evidence turn lies
//! in a top-5 row's window); session R@5 / R@15 (an evidence session is among the
//! first k *distinct* conversations of the 50 rows, which a client asking for five
//! rows does not see); MRR of the first evidence turn. "limit 5 ≠ top 5 of 50" counts
//! the questions whose `limit: 5` rows differ from the first five rows of the
//! `limit: 50` call (0 when the ranking does not depend on `limit`). Questions whose evidence names no existing turn are left out.
//! A row that absorbed its neighbours (the neighbourhood merge, `Tuning::absorb`)
//! returns their ids and previews in `absorbed`: it counts as a turn hit only for
//! the turns whose text it returns (its shown message and the absorbed ones), and
//! "client chars per call" (the characters of every preview the client's rows return,
//! absorbed ones included) and "client sessions per call" (distinct conversations
//! among them) are printed beside the client figures, with the client R@5 per LoCoMo
//! category, turn and session.
//! Also the recall@15 of the 1-bit first pass against the exact one (same question,
//! `Embeddings::search_with`, forced on these small stores, which the default keeps
//! exact), at the default oversampling and at a tight one.
//!
//! Run: `cargo bench --bench locomo_semantic`. `BENCH_VARIANTS` (comma-separated,
//! default [`DEFAULT_VARIANTS`]): `default` (no `mode` argument, shipped tuning),
//! `default:dN:kK:aW:rR:cC:nP:mL:lL` (the same with hybrid's candidate depths N for
//! the semantic and literal legs and K for the keyword leg, the neighbourhood merge's
//! window W and depth R, a cap of C rows per session, rows from new sessions from row
//! P on, maximal marginal relevance with score weight L, and the client protocol's
//! `limit` L instead of 5, every part optional),
//! `semantic`, or `hybrid:VEC:none` / `hybrid:VEC:sum|doc:WINDOW:WEIGHT[:OWN]`, either
//! with a part `mm` for min-max normalisation of the semantic leg and a last part
//! `tB` for the temporal routing's boost (`t0`: none) (a
//! [`Tuning`] set for the run); `BENCH_BASELINE` (default `hybrid:0.3:none`, the previous
//! hybrid) is what the paired bootstrap intervals compare against; `BENCH_UNITS`
//! (`"1:1:0,3:2:0"` as window:stride:title, default `1:1:0`) the embedded units;
//! `BENCH_BITS=1` also measures the 1-bit first pass against the exact one;
//! `BENCH_SAVE=FILE` writes every variant's per-question ranks (JSON) and
//! `BENCH_LOAD=FILE` adds those of an earlier run as variants `saved:NAME` (a baseline a
//! change of the index format cannot show in the same run: run the previous commit with
//! `BENCH_SAVE`, then this one with `BENCH_LOAD` and `BENCH_BASELINE=saved:default`);
//! `BENCH_VARIANTS=loo` measures [`LOO_GRID`] (the default and a small grid around
//! it); with two variants or more the harness also prints the leave-one-conversation-out
//! choice (the variant with the best client turn + session R@5 on the other
//! conversations, scored on the held-out one) beside the default's whole-half figures
//! (`BENCH_VARIANTS=loo cargo bench --bench locomo_semantic`);
//! `BENCH_REUSE=1` keeps the stores under `$BENCH_DIR/locomo_semantic/<model>` and
//! ingests into them again (nothing re-embedded) instead of fresh temporary ones.
#![allow(clippy::print_stdout, clippy::unwrap_used)]

mod common;

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, Result};
use serde_json::{json, Value};
use skills::bench::locomo;
use skills::embed::Embedder;
use skills::engines::semantic_search::{self, Tuning};
use skills::engines::{Context, Norm};
use skills::host::Host;
use skills::search::postings::Spread;
use skills::stores::conversations::embeddings::{self, Embeddings, Filter, FirstPass, UnitSpec};
use skills::stores::conversations::index::Neighbourhood;
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
    /// LoCoMo category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5
    /// adversarial).
    category: u8,
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
                category: q["category"]
                    .as_u64()
                    .and_then(|c| u8::try_from(c).ok())
                    .unwrap_or(0),
            });
        }
    }
    Ok(qs)
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
        .unwrap_or_else(|_| "1:1:0".into())
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
    // `BENCH_REUSE=1`: one lasting folder per model under `$BENCH_DIR`, ingested into
    // again (nothing changes, nothing is re-embedded), so a sweep over tunings does not
    // pay the second tier's embedding each run; else a fresh temporary folder.
    let tmp = tempfile::tempdir()?;
    let root = if std::env::var("BENCH_REUSE").as_deref() == Ok("1") {
        let root = common::model_dir("locomo_semantic", embedder.name());
        std::fs::create_dir_all(&root)?;
        root
    } else {
        tmp.path().to_path_buf()
    };
    let mut converted = Vec::new();
    for sample in &data {
        let id = sample["sample_id"].as_str().unwrap_or("conv").to_owned();
        let path = root.join(format!("{id}.jsonl"));
        let qs = convert(sample, &path)?;
        converted.push((id, path, qs));
    }
    let questions: usize = converted.iter().map(|c| c.2.len()).sum();
    println!("## semantic-search on LoCoMo (dev half: {} conversations, {questions} questions with evidence)\n", converted.len());
    println!(
        "model `{}`; per-conversation haystack; k = 5 / 15\n",
        embedder.name()
    );
    let variants: Vec<Variant> = match std::env::var("BENCH_VARIANTS") {
        Ok(v) if v == "loo" => LOO_GRID.to_owned(),
        Ok(v) => v,
        Err(_) => DEFAULT_VARIANTS.into(),
    }
    .split(',')
    .map(Variant::parse)
    .collect::<Result<_>>()?;
    let baseline = std::env::var("BENCH_BASELINE").unwrap_or_else(|_| "hybrid:0.3:none".into());
    println!(
        "variants: `mode:vec weight:context:window:neighbour weight:own weight` (`default`: no \
         `mode` argument and the shipped tuning); intervals: paired bootstrap (2,000 resamples, \
         95 %) of the difference against `{baseline}`\n"
    );
    let mut rows = Vec::new();
    // Leave-one-conversation-out lines, one per unit.
    let mut held_out = Vec::new();
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
        // Per variant, per question in order: (turn rank, session rank, category).
        let mut ranks: Vec<Vec<Ranks>> = vec![Vec::new(); variants.len()];
        let mut windows5: Vec<usize> = vec![0; variants.len()];
        // Per variant: questions whose `limit: 5` rows differ from the first five of
        // the `limit: 50` call.
        let mut mismatches: Vec<usize> = vec![0; variants.len()];
        // Per variant: characters the client's rows return (previews, absorbed rows'
        // previews included) and distinct sessions among them, summed over questions.
        let mut chars: Vec<usize> = vec![0; variants.len()];
        let mut spanned: Vec<usize> = vec![0; variants.len()];
        // The conversation (index) of each question, in the order of `ranks[_]`.
        let mut groups: Vec<usize> = Vec::new();
        for (ci, (id, path, qs)) in converted.iter().enumerate() {
            groups.extend(qs.iter().map(|_| ci));
            let dir = root.join(format!(
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
            if unit.window == 1
                && unit.stride == 1
                && !unit.title
                && std::env::var("BENCH_BITS").is_ok()
            {
                let e = Embeddings::open(&paths.conversations)
                    .map_err(|e| anyhow::anyhow!("embeddings: {e}"))?;
                let damaged = |_| anyhow::anyhow!("damaged embeddings");
                for q in qs {
                    let v = embedder.embed_query(&q.query);
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
            for (vi, v) in variants.iter().enumerate() {
                semantic_search::tune(v.tuning);
                for q in qs {
                    let call = |limit: usize| -> Result<Vec<Value>> {
                        let mut args = json!({"query": q.query, "limit": limit});
                        if let Some(mode) = &v.mode {
                            args["mode"] = json!(mode);
                        }
                        let out = host
                            .call("semantic-search", args)
                            .map_err(|e| anyhow::anyhow!("{e}"))?;
                        Ok(out.data["rows"].as_array().cloned().unwrap_or_default())
                    };
                    // The client protocol: the five rows of one call with `limit: 5`.
                    let five = call(v.limit)?;
                    let rows = call(50)?;
                    let key = |r: &Value| {
                        (
                            r["conversation_id"].as_str().unwrap_or("").to_owned(),
                            r["message_id"].as_str().unwrap_or("").to_owned(),
                        )
                    };
                    let differs = five.len() != rows.len().min(CLIENT_LIMIT)
                        || five.iter().zip(&rows).any(|(a, b)| key(a) != key(b));
                    mismatches[vi] += usize::from(differs);
                    // A row returns the text of its shown message and of the rows it
                    // absorbed (their ids and previews): a turn hit only for those.
                    let returned = |r: &Value| -> Vec<String> {
                        std::iter::once(&r["message_id"])
                            .chain(
                                r["absorbed"]
                                    .as_array()
                                    .into_iter()
                                    .flatten()
                                    .map(|a| &a["message_id"]),
                            )
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    };
                    let client_turn = five
                        .iter()
                        .position(|r| returned(r).iter().any(|m| q.turns.contains(m)));
                    chars[vi] += five
                        .iter()
                        .map(|r| {
                            let own = r["preview"].as_str().map_or(0, |p| p.chars().count());
                            let absorbed: usize = r["absorbed"]
                                .as_array()
                                .into_iter()
                                .flatten()
                                .filter_map(|a| a["preview"].as_str())
                                .map(|p| p.chars().count())
                                .sum();
                            own + absorbed
                        })
                        .sum::<usize>();
                    let distinct: HashSet<&str> = five
                        .iter()
                        .filter_map(|r| r["conversation_id"].as_str())
                        .collect();
                    spanned[vi] += distinct.len();
                    let client_session = five.iter().position(|r| {
                        q.sessions
                            .contains(r["conversation_id"].as_str().unwrap_or(""))
                    });
                    let shown: Vec<&str> = rows
                        .iter()
                        .map(|r| r["message_id"].as_str().unwrap_or(""))
                        .collect();
                    let turn = shown.iter().position(|m| q.turns.contains(*m));
                    // Window hit: an evidence turn between a top-5 row's first and last ids.
                    let in_window = rows.iter().take(5).any(|r| {
                        let (a, b) = (
                            r["first_message_id"].as_str().unwrap_or(""),
                            r["last_message_id"].as_str().unwrap_or(""),
                        );
                        q.turns.iter().any(|e| within(e, a, b))
                    });
                    windows5[vi] += usize::from(in_window);
                    let mut sessions: Vec<&str> = Vec::new();
                    for r in &rows {
                        let c = r["conversation_id"].as_str().unwrap_or("");
                        if !sessions.contains(&c) {
                            sessions.push(c);
                        }
                    }
                    let session = sessions.iter().position(|s| q.sessions.contains(*s));
                    ranks[vi].push(Ranks {
                        turn,
                        session,
                        category: q.category,
                        client_turn,
                        client_session,
                    });
                }
                semantic_search::tune(None);
            }
        }
        let mut names: Vec<String> = variants.iter().map(|v| v.name.clone()).collect();
        if let Some(file) = std::env::var_os("BENCH_SAVE") {
            let saved: serde_json::Map<String, Value> = names
                .iter()
                .zip(&ranks)
                .map(|(name, r)| (name.clone(), Ranks::to_json(r)))
                .collect();
            std::fs::write(&file, serde_json::to_vec(&saved)?)?;
        }
        if let Some(file) = std::env::var_os("BENCH_LOAD") {
            let saved: serde_json::Map<String, Value> =
                serde_json::from_slice(&std::fs::read(&file)?)?;
            for (name, r) in saved {
                let r = Ranks::from_json(&r)?;
                anyhow::ensure!(
                    r.len() == ranks[0].len()
                        && r.iter()
                            .zip(&ranks[0])
                            .all(|(a, b)| a.category == b.category),
                    "{}: `{name}` was measured on other questions",
                    file.to_string_lossy()
                );
                names.push(format!("saved:{name}"));
                ranks.push(r);
            }
        }
        held_out.push(leave_one_out(unit, &groups, &names, &ranks));
        let base = names.iter().position(|v| *v == baseline);
        for (vi, name) in names.iter().enumerate() {
            let r = &ranks[vi];
            let n = r.len().max(1) as f64;
            let at = |k: usize, f: fn(&Ranks) -> Option<usize>| {
                r.iter().filter(|x| f(x).is_some_and(|p| p < k)).count() as f64 / n
            };
            let turn = |x: &Ranks| x.turn;
            let session = |x: &Ranks| x.session;
            // The client's rows are all the rows of its call: any position is a hit.
            let client_turn = |x: &Ranks| x.client_turn.map(|_| 0);
            let client_session = |x: &Ranks| x.client_session.map(|_| 0);
            let mrr = r
                .iter()
                .filter_map(|x| x.turn)
                .map(|p| 1.0 / (p as f64 + 1.0))
                .sum::<f64>()
                / n;
            let ci = |f: fn(&Ranks) -> Option<usize>| match base {
                Some(b) if b != vi => {
                    let (lo, hi) = paired_bootstrap(&ranks[b], r, f, 5);
                    format!(" ({:+.1}…{:+.1})", 100.0 * lo, 100.0 * hi)
                }
                _ => String::new(),
            };
            let per_cat = |f: fn(&Ranks) -> Option<usize>| -> String {
                (1..=5u8)
                    .map(|c| {
                        let of: Vec<&Ranks> = r.iter().filter(|x| x.category == c).collect();
                        let hit = of.iter().filter(|x| f(x).is_some()).count();
                        format!("{:.1}", 100.0 * hit as f64 / of.len().max(1) as f64)
                    })
                    .collect::<Vec<_>>()
                    .join(" / ")
            };
            rows.push(vec![
                format!(
                    "{}{}{}",
                    unit.window,
                    if unit.stride == 1 {
                        String::new()
                    } else {
                        format!("/{}", unit.stride)
                    },
                    if unit.title { " + title" } else { "" }
                ),
                format!("`{name}`"),
                format!(
                    "{:.1} %{}",
                    100.0 * at(CLIENT_LIMIT, client_turn),
                    ci(client_turn)
                ),
                format!(
                    "{:.1} %{}",
                    100.0 * at(CLIENT_LIMIT, client_session),
                    ci(client_session)
                ),
                if vi < variants.len() {
                    format!("{:.0}", chars[vi] as f64 / n)
                } else {
                    "—".into() // not saved
                },
                if vi < variants.len() {
                    format!("{:.2}", spanned[vi] as f64 / n)
                } else {
                    "—".into() // not saved
                },
                if vi < variants.len() {
                    mismatches[vi].to_string()
                } else {
                    "—".into() // not saved
                },
                format!("{:.1} %{}", 100.0 * at(5, turn), ci(turn)),
                format!("{:.1} %", 100.0 * at(15, turn)),
                if vi < variants.len() {
                    format!("{:.1} %", 100.0 * windows5[vi] as f64 / n)
                } else {
                    "—".into() // not saved
                },
                format!("{:.1} %{}", 100.0 * at(5, session), ci(session)),
                format!("{:.1} %", 100.0 * at(15, session)),
                format!("{mrr:.3}"),
                per_cat(client_turn),
                per_cat(client_session),
            ]);
        }
    }
    common::table(
        &[
            "unit",
            "variant",
            "client turn R@5 (CI of Δ)",
            "client session R@5 (CI of Δ)",
            "client chars per call",
            "client sessions per call",
            "limit 5 ≠ top 5 of 50",
            "ranked: turn R@5 (CI of Δ)",
            "ranked: turn R@15",
            "ranked: window R@5",
            "ranked: session R@5 (CI of Δ)",
            "ranked: session R@15",
            "ranked: turn MRR",
            "client turn R@5 by category 1/2/3/4/5",
            "client session R@5 by category 1/2/3/4/5",
        ],
        &rows,
    );
    for line in held_out.into_iter().flatten() {
        println!("{line}\n");
    }
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

/// The rows a client asks for in the client protocol: one call, default arguments,
/// `limit: 5`.
const CLIENT_LIMIT: usize = 5;

/// Variants measured when `BENCH_VARIANTS` is not set: the seed's `semantic` mode,
/// plain BM25 (the keyword leg alone, no neighbours), the previous hybrid, the keyword
/// leg with neighbours alone, and the shipped default.
const DEFAULT_VARIANTS: &str = "semantic,hybrid:0:none,hybrid:0.3:none,hybrid:0:doc:2:0.5,default";

/// `BENCH_VARIANTS=loo`: the shipped default and a small grid around each of its
/// constants (vec weight 0.3, context window 2 and weight 0.5, temporal boost 0.5,
/// candidate depth 50), for the leave-one-conversation-out choice.
const LOO_GRID: &str = "default,hybrid:0.2:doc:2:0.5,hybrid:0.4:doc:2:0.5,hybrid:0.3:doc:1:0.5,\
hybrid:0.3:doc:3:0.5,hybrid:0.3:doc:2:0.3,hybrid:0.3:doc:2:0.7,hybrid:0.3:doc:2:0.5:t0.25,\
hybrid:0.3:doc:2:0.5:t1,default:d30,default:d100";

/// Leave one conversation out over the variants (`groups[i]`: question `i`'s
/// conversation): the variant with the best client turn + session R@5 on the other
/// conversations, scored on the held-out one; one line saying the choices and the
/// held-out figures beside `default`'s whole-half ones. `None` with fewer than two
/// variants.
fn leave_one_out(
    unit: &UnitSpec,
    groups: &[usize],
    names: &[String],
    ranks: &[Vec<Ranks>],
) -> Option<String> {
    if names.len() < 2 {
        return None;
    }
    // The client's rows are all the rows of its call (a variant may ask for another
    // `limit`): any position is a hit.
    let at5 = |r: &[Ranks], f: fn(&Ranks) -> Option<usize>| -> Vec<bool> {
        r.iter().map(|x| f(x).is_some()).collect()
    };
    let scored: Vec<common::Scored<'_>> = names
        .iter()
        .zip(ranks)
        .map(|(name, r)| common::Scored {
            name,
            hits: vec![at5(r, |x| x.client_turn), at5(r, |x| x.client_session)],
        })
        .collect();
    let held = common::leave_one_out(groups, &scored)?;
    let whole =
        |hits: &[bool]| hits.iter().filter(|h| **h).count() as f64 / hits.len().max(1) as f64;
    let default = scored.iter().find(|s| s.name == "default").map_or_else(
        || "—".to_owned(),
        |d| {
            format!(
                "{:.1} % / {:.1} %",
                100.0 * whole(&d.hits[0]),
                100.0 * whole(&d.hits[1])
            )
        },
    );
    Some(format!(
        "Leave one conversation out (unit {}:{}): the variant with the best client turn + \
         session R@5 on the other conversations, scored on the held-out one — chosen {:?}; \
         held-out client turn / session R@5 **{:.1} % / {:.1} %** (mean of the folds {:.1} % / \
         {:.1} %); `default` on the whole half {default}.",
        unit.window,
        unit.stride,
        held.chosen,
        100.0 * held.held[0],
        100.0 * held.held[1],
        100.0 * held.fold_mean[0],
        100.0 * held.fold_mean[1],
    ))
}

/// One ranking variant: a `mode` argument (none: the default) and a [`Tuning`].
struct Variant {
    name: String,
    mode: Option<String>,
    tuning: Option<Tuning>,
    /// The client protocol's `limit` ([`CLIENT_LIMIT`] unless `lN` says).
    limit: usize,
}

impl Variant {
    /// `default`, `default:dN:kK:aW:rR:cC:nP:mL:lL`, `semantic`, or `hybrid:VEC:none` /
    /// `hybrid:VEC:sum|doc:WINDOW:WEIGHT[:OWN]`, then optionally `:mm` and `:tB`.
    fn parse(s: &str) -> Result<Self> {
        let name = s.trim().to_owned();
        let mut p: Vec<&str> = name.split(':').collect();
        let mut limit = CLIENT_LIMIT;
        let temporal_boost = common::temporal_boost(&mut p, &name, false)?;
        let vec_norm = if p.len() > 1 && p.last() == Some(&"mm") {
            p.pop();
            Norm::MinMax
        } else {
            Norm::Best
        };
        let num = |i: usize, d: f64| -> Result<f64> {
            p.get(i).map_or(Ok(d), |x| {
                x.parse()
                    .with_context(|| format!("variant `{name}`: `{x}` is not a number"))
            })
        };
        let (mode, tuning) = match p[0] {
            "default" if name == "default" => (None, None),
            "default" => {
                // `default:dN:kK:aW:rR:cC:nP:mL:lL`: the shipped ranking with other candidate
                // depths, merge, session cap or client limit.
                let mut tuning = Tuning {
                    vec_norm,
                    temporal_boost,
                    ..Tuning::DEFAULT
                };
                for part in &p[1..] {
                    let depth = |n: &str| -> Result<usize> {
                        n.parse()
                            .ok()
                            .filter(|d| *d > 0)
                            .with_context(|| format!("variant `{name}`: `{part}` is not a depth"))
                    };
                    match part.split_at_checked(1) {
                        Some(("d", n)) => tuning.candidates = depth(n)?,
                        Some(("k", n)) => tuning.keyword_candidates = depth(n)?,
                        Some(("a", n)) => {
                            tuning.absorb = n.parse().with_context(|| {
                                format!("variant `{name}`: `{part}` is not a window")
                            })?;
                        }
                        Some(("l", n)) => limit = depth(n)?,
                        Some(("r", n)) => tuning.absorb_depth = depth(n)?,
                        Some(("c", n)) => tuning.session_cap = depth(n)?,
                        Some(("n", n)) => {
                            tuning.novel_from = n.parse().with_context(|| {
                                format!("variant `{name}`: `{part}` is not a row")
                            })?;
                        }
                        Some(("m", n)) => {
                            tuning.mmr = n.parse().with_context(|| {
                                format!("variant `{name}`: `{part}` is not a weight")
                            })?;
                        }
                        _ => anyhow::bail!(
                            "variant `{name}`: `{part}` is not `dN` (semantic and literal depth), `kN` (keyword depth), `aW` (neighbourhood merge window), `rN` (merge depth), `cN` (rows per session), `nP` (new sessions from row P), `mL` (MMR's score weight) or `lN` (the client's limit)"
                        ),
                    }
                }
                (None, Some(tuning))
            }
            "semantic" => (Some("semantic".to_owned()), None),
            "hybrid" => {
                let context = match p.get(2).copied().unwrap_or("none") {
                    "none" => None,
                    kind => {
                        let weight = num(4, 0.5)?;
                        let spread = match kind {
                            "sum" => Spread::Sum { weight },
                            "doc" => Spread::Document { weight },
                            other => anyhow::bail!(
                                "variant `{name}`: context `{other}` is not none, sum or doc"
                            ),
                        };
                        Some(Neighbourhood {
                            window: num(3, 1.0)? as usize,
                            spread,
                        })
                    }
                };
                let tuning = Tuning {
                    vec_weight: num(1, 0.3)?,
                    context,
                    own_weight: num(5, 0.0)?,
                    vec_norm,
                    temporal_boost,
                    candidates: semantic_search::CANDIDATES,
                    keyword_candidates: semantic_search::KEYWORD_CANDIDATES,
                    absorb: semantic_search::ABSORB,
                    absorb_depth: semantic_search::ABSORB_DEPTH,
                    session_cap: semantic_search::SESSION_CAP,
                    novel_from: semantic_search::NOVEL_FROM,
                    mmr: semantic_search::MMR,
                };
                (Some("hybrid".to_owned()), Some(tuning))
            }
            other => {
                anyhow::bail!("variant `{name}`: mode `{other}` is not default, semantic or hybrid")
            }
        };
        Ok(Self {
            name,
            mode,
            tuning,
            limit,
        })
    }
}

/// Where one question's first relevant turn and session ranked (0-based) and its
/// LoCoMo category.
#[derive(Debug, Clone, Copy)]
struct Ranks {
    turn: Option<usize>,
    session: Option<usize>,
    category: u8,
    /// Client protocol: the first row of the `limit: 5` call that is an evidence turn.
    client_turn: Option<usize>,
    /// Client protocol: the first row of the `limit: 5` call in an evidence session.
    client_session: Option<usize>,
}

impl Ranks {
    /// `[[turn, session, category, client turn, client session], …]` (`null` for a
    /// rank not found), what `BENCH_SAVE` writes per variant.
    fn to_json(r: &[Ranks]) -> Value {
        r.iter()
            .map(|x| {
                json!([
                    x.turn,
                    x.session,
                    x.category,
                    x.client_turn,
                    x.client_session
                ])
            })
            .collect()
    }

    fn from_json(v: &Value) -> Result<Vec<Ranks>> {
        let bad = || anyhow::anyhow!("BENCH_LOAD: not what BENCH_SAVE writes");
        v.as_array()
            .ok_or_else(bad)?
            .iter()
            .map(|x| {
                let rank = |i: usize| x[i].as_u64().map(|p| p as usize);
                Ok(Ranks {
                    turn: rank(0),
                    session: rank(1),
                    category: u8::try_from(x[2].as_u64().ok_or_else(bad)?)?,
                    client_turn: rank(3),
                    client_session: rank(4),
                })
            })
            .collect()
    }
}

/// Paired bootstrap interval of R@k(`b`) − R@k(`a`) over the same questions
/// ([`common::paired_bootstrap`]).
fn paired_bootstrap(
    a: &[Ranks],
    b: &[Ranks],
    f: fn(&Ranks) -> Option<usize>,
    k: usize,
) -> (f64, f64) {
    let hits =
        |r: &[Ranks]| -> Vec<bool> { r.iter().map(|x| f(x).is_some_and(|p| p < k)).collect() };
    common::paired_bootstrap(&hits(a), &hits(b))
}

/// True when dia id `e` ("D3:7") lies between `a` and `b` of the same session.
fn within(e: &str, a: &str, b: &str) -> bool {
    match (parse_dia(e), parse_dia(a), parse_dia(b)) {
        (Some((s, i)), Some((sa, ia)), Some((sb, ib))) => s == sa && s == sb && ia <= i && i <= ib,
        _ => false,
    }
}
