//! recall on LoCoMo (dev half, `$SKILLS_CORPUS_DIR/locomo/`, else
//! `../shared/corpus/locomo/`), measured as a client receives it, beside its sources
//! alone on the same questions and the same stores (issue 44, items 1, 4 and 5).
//!
//! **Stores.** Per LoCoMo conversation (per-conversation haystack), its sessions are
//! imported as transcripts exactly as `benches/locomo_semantic.rs` imports them
//! ([`locomo::Conversation::transcript_records`]: each session one conversation, each
//! turn one message whose id is its dia id, embedded by the real ingest with the
//! static model, window 1). Two configurations:
//!
//! - `transcripts`: no memories store (memo-search is skipped by recall with a note) —
//!   how issue 44 measured recall (0.733 / 0.891 against semantic-search's 0.739 / 0.890);
//! - `transcripts + turn memories`: the same transcripts, and every turn also imported as
//!   one memory by the real memory importer, as `benches/quality.rs` imports unit `turn`
//!   (id `<conv>/<dia id>`, title `Speaker (date)`, body the turn's text).
//!
//! **Protocol** (the client's): one call with default arguments — recall with only
//! `question`, its first five items; semantic-search and memo-search with `query` and
//! `limit: 5`; search-conversations with `term` = the question and `limit: 5` — and the
//! five rows it returns. A question is a turn hit when one of those five rows *is* an
//! evidence turn, a session hit when one of them lies in an evidence session.
//! **How a row maps to a turn:** a transcript row is its `message_id` (the dia id; the
//! neighbours semantic-search scored it with are not shown, so they do not count); a
//! memory is the turn it was imported from (its id's dia id) — in this configuration a
//! memory is a copy of one turn, nothing more, so it counts for that turn and its session
//! only. A recall item counts only for the row that stands for it (its `id`), never for
//! the citations it merged (`also`): the client reads only that row's text. Beside the
//! recall figures: each source's share of the five items (items returned by two sources
//! count for each), and the characters of text returned per call (the five items' `text`).
//!
//! **Variants** of recall's fusion (`RECALL_VARIANTS`, comma-separated, default
//! [`VARIANTS`]): `default` (the shipped `skills/recall/SKILL.md`), or parts
//! `kK` (RRF k), `mM` (the memory source's weight; a superseded memory keeps a quarter of
//! it), `sS` (semantic-search's weight), `wW` (search-conversations' weight), `oO` and
//! `nN` (the near-duplicate merge's overlap and fewest words), `nodup` (no near-duplicate
//! merge), e.g. `k60:s1.1`; each variant is a copy of the bundled skills with only those
//! numbers of recall's document changed. Beside each ranking: distinct turns among its
//! five rows and the time of one call through `Host::call` (median, p95; the small
//! per-conversation stores, so it compares variants, not the 1M-message target).
//!
//! **Leave one conversation out**: for each of the conversations, the variant with the
//! best turn + session R@5 on the other conversations' questions (ties: the earlier in
//! the list) is scored on that conversation's; the held-out figures (all folds'
//! questions together) are printed beside the whole-half figures of `default` and of
//! each source. A variant is worth adopting only when its held-out figure wins.
//!
//! **Through the team archive** (`RECALL_ARCHIVE=1`, issue 39): each conversation's
//! data folder (transcripts and turn memories, with their vectors) is pushed by the
//! real `skills archive migrate` / `push --no-redact` into a database of its own on a
//! PostgreSQL (`BENCH_ARCHIVE_URL`, a superuser URL, else a throwaway one from
//! `scripts/postgres`, stopped at the end), and the `transcripts + turn memories`
//! configuration asks every source and recall's default the same questions with
//! `--archive` too. Printed beside the local figures: the archive's R@5, and every
//! question whose five rows (ids and scores, in order) differ from the local ones.
//!
//! Run: `cargo bench --bench locomo_recall` (skipped, saying so, without the corpus or
//! the model). `RECALL_CONFIGS` (`transcripts,memories`) chooses the configurations.
//! The archive comparison alone, as docs/performance.md reports it:
//! `RECALL_ARCHIVE=1 RECALL_CONFIGS=memories RECALL_VARIANTS=default cargo bench --bench
//! locomo_recall`.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::cast_precision_loss)]

mod common;

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, ensure, Context as _, Result};
use serde_json::{json, Value};
use skills::bench::locomo::{self, Conversation, Question, Unit};
use skills::embed::{Embedder, Tier};
use skills::engines::Context;
use skills::host::Host;
use skills::ingest::memories::import_paths_with;
use skills::stores::conversations::embeddings::UnitSpec;
use skills::stores::conversations::ConversationStore;
use skills::stores::memories::MemoryStore;
use skills::stores::StorePaths;

/// Rows a client reads: one call's first five.
const CLIENT_ROWS: usize = 5;

/// The fusion variants measured by default: the shipped one, without near-duplicate
/// merging, and a small grid around each of its numbers (the near-duplicate overlap and
/// fewest words, RRF k, the weights of the transcript sources against memories).
const VARIANTS: &str = "default,nodup,o0.4,o0.5,o0.6,o0.7,o0.9,o1,n2,n6,k10,k120,s1.2,m1.2,w0";

/// What one question got from one ranking: the first of the five rows that is an
/// evidence turn / lies in an evidence session, the sources of those rows, and the
/// characters of text returned.
#[derive(Debug, Clone, Default)]
struct Outcome {
    turn: bool,
    session: bool,
    /// Per returned row: the labels of the sources that returned it.
    sources: Vec<Vec<String>>,
    /// Distinct turns among the rows (a memory and the message it copies are one turn).
    distinct: usize,
    chars: usize,
}

/// Per ranking: one outcome per question, in question order.
#[derive(Default)]
struct Tally {
    outcomes: Vec<Outcome>,
    /// The time of each call, through `Host::call`.
    times: Vec<std::time::Duration>,
}

/// The questions, flattened: `(conversation index, category)`.
struct Asked {
    conv: Vec<usize>,
    category: Vec<u8>,
}

impl Tally {
    fn rate(&self, keep: &dyn Fn(usize) -> bool, f: fn(&Outcome) -> bool) -> f64 {
        let (h, n) = self
            .outcomes
            .iter()
            .enumerate()
            .filter(|(i, _)| keep(*i))
            .fold((0usize, 0usize), |(h, n), (_, o)| {
                (h + usize::from(f(o)), n + 1)
            });
        h as f64 / n.max(1) as f64
    }
}

fn main() -> Result<()> {
    if std::env::args().any(|a| a == "--list") {
        return Ok(());
    }
    let Some(file) = locomo::corpus_file() else {
        println!(
            "## recall on LoCoMo\n\nskipped: locomo/locomo-dev.json not found under \
             $SKILLS_CORPUS_DIR or ../shared/corpus\n"
        );
        return Ok(());
    };
    let embedder = match Embedder::load_tier(Tier::Static) {
        Ok(e) => Arc::new(e),
        Err(e) => {
            println!("## recall on LoCoMo\n\nskipped: {e}\n");
            return Ok(());
        }
    };
    let convs = locomo::load(&file)?;
    let variants = common::env_list("RECALL_VARIANTS", VARIANTS);
    let configs = common::env_list("RECALL_CONFIGS", "transcripts,memories");
    let archive_on = std::env::var("RECALL_ARCHIVE").as_deref() == Ok("1");
    let server = if archive_on && configs.iter().any(|c| c == "memories") {
        Some(common::postgres::Server::start()?)
    } else {
        if archive_on {
            println!(
                "RECALL_ARCHIVE=1: skipped, it measures the `memories` configuration \
                 (transcripts + turn memories), which RECALL_CONFIGS leaves out\n"
            );
        }
        None
    };
    let tmp = tempfile::tempdir()?;
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("skills");
    // One skills folder per variant: the bundled skills with recall's numbers changed.
    let mut skill_dirs = Vec::new();
    for v in &variants {
        let dir = if v == "default" {
            shipped.clone()
        } else {
            let dir = tmp.path().join("skills").join(v.replace(':', "_"));
            common::copy_dir(&shipped, &dir)?;
            let doc = dir.join("recall").join("SKILL.md");
            let text = std::fs::read_to_string(&doc)?;
            std::fs::write(&doc, patch(&text, v)?)?;
            dir
        };
        skill_dirs.push(dir);
    }
    let asked = Asked {
        conv: convs
            .iter()
            .enumerate()
            .flat_map(|(i, c)| c.questions.iter().map(move |_| i))
            .collect(),
        category: convs
            .iter()
            .flat_map(|c| c.questions.iter().map(|q| q.category))
            .collect(),
    };
    println!("## recall on LoCoMo (dev half)\n");
    println!(
        "{} conversations, {} questions with evidence; model `{}` (static, window 1), \
         per-conversation haystack; the first {CLIENT_ROWS} rows of one call with default \
         arguments; {}.\n",
        convs.len(),
        asked.conv.len(),
        embedder.name(),
        common::machine()
    );
    // Stores: per conversation, its transcripts, and (in another folder) its turns as
    // memories; a configuration points the host's memories path at the memories or at
    // a file that does not exist.
    let mut stores = Vec::new();
    // Per conversation, the URL of the archive its data folder was pushed into.
    let mut archives: Vec<Option<String>> = Vec::new();
    for c in &convs {
        let dir = tmp.path().join(&c.id);
        std::fs::create_dir_all(&dir)?;
        let transcript = dir.join("transcript.jsonl");
        write_lines(&transcript, &c.transcript_records())?;
        let paths = StorePaths::in_dir(&dir);
        let mut store = ConversationStore::open_rw(&paths.conversations)?;
        store.embed_with(
            embedder.clone(),
            UnitSpec {
                window: 1,
                stride: 1,
                title: false,
            },
        )?;
        let summary = skills::ingest::ingest_paths(&store, &[transcript], &mut |_, _| {});
        ensure!(summary.faults.is_empty(), "faults: {:?}", summary.faults);
        store
            .close_with(&mut |_, _| {})?
            .embeddings
            .context("no embeddings")?
            .map_err(anyhow::Error::msg)?;
        if configs.iter().any(|c| c == "memories") {
            let turns = dir.join("turns.jsonl");
            write_lines(&turns, &c.memory_records(Unit::Turn))?;
            let memories = MemoryStore::open_rw(&paths.memories)?;
            let summary = import_paths_with(&memories, &[turns], Some(&embedder))?;
            ensure!(summary.faults.is_empty(), "import faults: {summary}");
        }
        if let Some(server) = &server {
            archives.push(Some(push_to_archive(server, &dir, archives.len())?));
        }
        stores.push(paths);
    }
    for config in &configs {
        let with_memories = config == "memories";
        let title = if with_memories {
            "transcripts + turn memories"
        } else {
            "transcripts, no memories"
        };
        let mut sources: Vec<&str> = vec!["semantic-search", "search-conversations"];
        if with_memories {
            sources.insert(0, "memo-search");
        }
        let mut tallies: BTreeMap<String, Tally> = BTreeMap::new();
        let mut differences: Vec<String> = Vec::new();
        for (ci, c) in convs.iter().enumerate() {
            let mut paths = stores[ci].clone();
            if !with_memories {
                paths.memories = tmp.path().join("none").join("memories.sqlite");
            }
            let host = |dir: &Path| -> Result<Host> {
                let host = Host::load(
                    dir,
                    Context::new(paths.clone()).with_embedder(Some(embedder.clone())),
                );
                if host.get("recall").is_none() {
                    bail!("skill `recall` did not load: {:?}", host.diagnostics());
                }
                Ok(host)
            };
            let hosts: Vec<Host> = skill_dirs.iter().map(|d| host(d)).collect::<Result<_>>()?;
            // The same skills answering from this conversation's archive (the
            // configuration with memories only: the archive holds both).
            let archive = match archives.get(ci) {
                Some(Some(url)) if with_memories => {
                    let pool = skills::archive::search::Pool::new(
                        skills::archive::Target::parse(url).map_err(|e| anyhow::anyhow!("{e}"))?,
                    );
                    Some(Host::load(
                        &shipped,
                        Context::new(paths.clone())
                            .with_embedder(Some(embedder.clone()))
                            .with_archive(Some(Arc::new(pool))),
                    ))
                }
                _ => None,
            };
            for q in &c.questions {
                for source in &sources {
                    let (args, rows) = match *source {
                        "memo-search" => (json!({"query": q.question, "limit": 5}), "/hits"),
                        "search-conversations" => {
                            (json!({"term": q.question, "limit": 5}), "/rows")
                        }
                        _ => (json!({"query": q.question, "limit": 5}), "/rows"),
                    };
                    let t = std::time::Instant::now();
                    let out = hosts[0]
                        .call(source, args.clone())
                        .with_context(|| format!("{source}: `{}`", q.question))?;
                    let took = t.elapsed();
                    let local_rows = out.data.pointer(rows).and_then(Value::as_array);
                    let local_rows = local_rows.map_or(&[][..], Vec::as_slice);
                    let got_here = outcome(q, local_rows, source);
                    let tally = tallies.entry((*source).to_owned()).or_default();
                    tally.outcomes.push(got_here);
                    tally.times.push(took);
                    if let Some(archive) = &archive {
                        let t = std::time::Instant::now();
                        let out = archive.call(source, args).with_context(|| {
                            format!("{source} on the archive: `{}`", q.question)
                        })?;
                        let took = t.elapsed();
                        let got = out.data.pointer(rows).and_then(Value::as_array);
                        let got = got.map_or(&[][..], Vec::as_slice);
                        let tally = tallies.entry(format!("archive {source}")).or_default();
                        tally.outcomes.push(outcome(q, got, source));
                        tally.times.push(took);
                        if let Some(d) = difference(source, &q.question, local_rows, got) {
                            differences.push(d);
                        }
                    }
                }
                for (v, host) in variants.iter().zip(&hosts) {
                    let t = std::time::Instant::now();
                    let out = host
                        .call("recall", json!({"question": q.question}))
                        .with_context(|| format!("recall {v}: `{}`", q.question))?;
                    let took = t.elapsed();
                    let items = out.data["items"].as_array().map_or(&[][..], Vec::as_slice);
                    let items = &items[..items.len().min(CLIENT_ROWS)];
                    let tally = tallies.entry(format!("recall {v}")).or_default();
                    tally.outcomes.push(outcome(q, items, "recall"));
                    tally.times.push(took);
                    let Some(archive) = archive.as_ref().filter(|_| v == "default") else {
                        continue;
                    };
                    let t = std::time::Instant::now();
                    let out = archive
                        .call("recall", json!({"question": q.question}))
                        .with_context(|| format!("recall on the archive: `{}`", q.question))?;
                    let took = t.elapsed();
                    let got = out.data["items"].as_array().map_or(&[][..], Vec::as_slice);
                    let got = &got[..got.len().min(CLIENT_ROWS)];
                    let tally = tallies.entry("archive recall default".into()).or_default();
                    tally.outcomes.push(outcome(q, got, "recall"));
                    tally.times.push(took);
                    if let Some(d) = difference("recall", &q.question, items, got) {
                        differences.push(d);
                    }
                }
            }
        }
        report(title, &tallies, &sources, &variants, &asked);
        if archives.iter().any(Option::is_some) && with_memories {
            report_archive(&tallies, &sources, &differences);
        }
    }
    Ok(())
}

/// Makes database `bench_locomo_<i>` on `server`, migrates it and pushes the data
/// folder `dir` into it with the real `skills` binary; its URL.
fn push_to_archive(server: &common::postgres::Server, dir: &Path, i: usize) -> Result<String> {
    let url = server.database(&format!("bench_locomo_{i}"))?;
    let bin = Path::new(env!("CARGO_BIN_EXE_skills"));
    common::skills_on_archive(bin, dir, &url, &["--json", "archive", "migrate"], &[])?;
    let pushed = common::skills_on_archive(
        bin,
        dir,
        &url,
        &["--json", "archive", "push", "--no-redact"],
        &[],
    )?;
    let pushed: Value = serde_json::from_str(&pushed)?;
    eprintln!(
        "archive {i}: {} messages, {} memories, {} window vectors, {} memory vectors",
        pushed["messages_sent"],
        pushed["memories_sent"],
        pushed["units_sent"],
        pushed["memory_vectors_sent"]
    );
    Ok(url)
}

/// A line naming the question when the five rows `got` on the archive are not
/// `local`'s (each row's id and score, in order; the archive-only `machine`, `machine_id`
/// and `user` are not compared); `None` when they are.
fn difference(skill: &str, question: &str, local: &[Value], got: &[Value]) -> Option<String> {
    let keys = |rows: &[Value]| -> Vec<String> {
        rows.iter()
            .take(CLIENT_ROWS)
            .map(|r| {
                let id = r["id"]
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| format!("{}/{}", r["conversation_id"], r["message_id"]));
                format!("{id} {}", r["score"])
            })
            .collect()
    };
    let (l, a) = (keys(local), keys(got));
    (l != a).then(|| format!("- {skill}, `{question}`: local {l:?}, archive {a:?}"))
}

/// R@5 through the archive beside the local figures of the same run, and every
/// question whose rows differ.
fn report_archive(tallies: &BTreeMap<String, Tally>, sources: &[&str], differences: &[String]) {
    let all = |_: usize| true;
    let mut rows = Vec::new();
    for name in sources
        .iter()
        .map(|s| (*s).to_owned())
        .chain(["recall default".to_owned()])
    {
        let (Some(l), Some(a)) = (tallies.get(&name), tallies.get(&format!("archive {name}")))
        else {
            continue;
        };
        let same = l
            .outcomes
            .iter()
            .zip(&a.outcomes)
            .filter(|(x, y)| x.turn == y.turn && x.session == y.session)
            .count();
        let ms = |t: &Tally| {
            let s = common::Stats::of(t.times.clone());
            format!("{:.1}", s.median.as_secs_f64() * 1e3)
        };
        rows.push(vec![
            format!("`{name}`"),
            format!(
                "{:.3} / {:.3}",
                l.rate(&all, |o| o.turn),
                l.rate(&all, |o| o.session)
            ),
            format!(
                "{:.3} / {:.3}",
                a.rate(&all, |o| o.turn),
                a.rate(&all, |o| o.session)
            ),
            format!("{same} / {}", l.outcomes.len()),
            format!("{} / {}", ms(l), ms(a)),
        ]);
    }
    println!("### Through the team archive (transcripts + turn memories)\n");
    common::table(
        &[
            "ranking",
            "local turn / session R@5",
            "archive turn / session R@5",
            "questions with the same hits",
            "ms per call p50 local / archive",
        ],
        &rows,
    );
    println!(
        "Questions whose five rows (ids and scores, in order) differ on the archive: {}\n",
        differences.len()
    );
    for d in differences.iter().take(30) {
        println!("{d}");
    }
    if !differences.is_empty() {
        println!();
    }
}

/// The outcome of the rows a call returned (at most [`CLIENT_ROWS`] read): a row is
/// the turn its id ends with (`…/D3:7`), in that turn's session.
fn outcome(q: &Question, rows: &[Value], skill: &str) -> Outcome {
    let rows = &rows[..rows.len().min(CLIENT_ROWS)];
    let evidence: HashSet<&str> = q.evidence.iter().map(String::as_str).collect();
    let sessions: HashSet<u32> = q
        .evidence
        .iter()
        .filter_map(|e| Conversation::session_of(e))
        .collect();
    let mut o = Outcome::default();
    let mut seen = HashSet::new();
    for r in rows {
        let dia = match skill {
            "memo-search" => r["id"].as_str().and_then(|id| id.rsplit('/').next()),
            "recall" => r["id"].as_str().and_then(|id| id.rsplit('/').next()),
            _ => r["message_id"].as_str(),
        }
        .unwrap_or("");
        seen.insert(dia);
        o.turn |= evidence.contains(dia);
        o.session |= Conversation::session_of(dia).is_some_and(|s| sessions.contains(&s));
        let text = match skill {
            "memo-search" => r["body"].as_str(),
            "recall" => r["text"].as_str(),
            _ => r["preview"].as_str(),
        };
        o.chars += text.map_or(0, |t| t.chars().count());
        o.sources.push(if skill == "recall" {
            r["sources"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        } else {
            vec![skill.to_owned()]
        });
    }
    o.distinct = seen.len();
    o
}

fn report(
    title: &str,
    tallies: &BTreeMap<String, Tally>,
    sources: &[&str],
    variants: &[String],
    asked: &Asked,
) {
    println!("### {title}\n");
    let all = |_: usize| true;
    let turn = |o: &Outcome| o.turn;
    let session = |o: &Outcome| o.session;
    let mut cats: Vec<u8> = asked.category.clone();
    cats.sort_unstable();
    cats.dedup();
    let labels = ["memory", "transcript (meaning)", "transcript (keyword)"];
    let mut rows = Vec::new();
    let names: Vec<String> = sources
        .iter()
        .map(|s| (*s).to_owned())
        .chain(variants.iter().map(|v| format!("recall {v}")))
        .collect();
    for name in &names {
        let Some(t) = tallies.get(name) else { continue };
        let n = t.outcomes.len().max(1) as f64;
        let by_cat = |f: fn(&Outcome) -> bool| -> String {
            cats.iter()
                .map(|c| format!("{:.3}", t.rate(&|i| asked.category[i] == *c, f)))
                .collect::<Vec<_>>()
                .join(" / ")
        };
        let shares = if name.starts_with("recall") {
            let rows: usize = t.outcomes.iter().map(|o| o.sources.len()).sum();
            labels
                .iter()
                .map(|l| {
                    let k = t
                        .outcomes
                        .iter()
                        .flat_map(|o| &o.sources)
                        .filter(|s| s.iter().any(|x| x == l))
                        .count();
                    format!("{:.2}", k as f64 / rows.max(1) as f64)
                })
                .collect::<Vec<_>>()
                .join(" / ")
        } else {
            String::new()
        };
        rows.push(vec![
            format!("`{name}`"),
            format!("{:.3}", t.rate(&all, turn)),
            format!("{:.3}", t.rate(&all, session)),
            by_cat(turn),
            by_cat(session),
            format!(
                "{:.2}",
                t.outcomes.iter().map(|o| o.sources.len()).sum::<usize>() as f64 / n
            ),
            format!(
                "{:.2}",
                t.outcomes.iter().map(|o| o.distinct).sum::<usize>() as f64 / n
            ),
            format!(
                "{:.0}",
                t.outcomes.iter().map(|o| o.chars).sum::<usize>() as f64 / n
            ),
            shares,
            {
                let s = common::Stats::of(t.times.clone());
                format!(
                    "{:.2} / {:.2}",
                    s.median.as_secs_f64() * 1e3,
                    s.p95.as_secs_f64() * 1e3
                )
            },
        ]);
    }
    let cat_header = cats.iter().map(u8::to_string).collect::<Vec<_>>().join("/");
    let turn_cats = format!("turn R@5 by category {cat_header}");
    let session_cats = format!("session R@5 by category {cat_header}");
    common::table(
        &[
            "ranking",
            "turn R@5",
            "session R@5",
            &turn_cats,
            &session_cats,
            "rows per call",
            "distinct turns per call",
            "characters per call",
            "recall: items from memory / meaning / keyword",
            "ms per call p50 / p95",
        ],
        &rows,
    );
    // Leave one conversation out over the recall variants.
    let scored: Vec<common::Scored<'_>> = variants
        .iter()
        .filter_map(|v| {
            let t = tallies.get(&format!("recall {v}"))?;
            Some(common::Scored {
                name: v,
                hits: vec![
                    t.outcomes.iter().map(|o| o.turn).collect(),
                    t.outcomes.iter().map(|o| o.session).collect(),
                ],
            })
        })
        .collect();
    let Some(held) = common::leave_one_out(&asked.conv, &scored) else {
        return;
    };
    let whole = |name: &str| {
        tallies.get(name).map_or("—".to_owned(), |t| {
            format!("{:.3} / {:.3}", t.rate(&all, turn), t.rate(&all, session))
        })
    };
    println!(
        "Leave one conversation out (the variant with the best turn + session R@5 on the \
         other conversations, scored on the held-out one): chosen {:?}; held-out turn / \
         session R@5 **{:.3} / {:.3}** (mean of the {} folds {:.3} / {:.3}); whole half: \
         recall default {}, {}.\n",
        held.chosen,
        held.held[0],
        held.held[1],
        held.chosen.len(),
        held.fold_mean[0],
        held.fold_mean[1],
        whole("recall default"),
        sources
            .iter()
            .map(|s| format!("{s} {}", whole(s)))
            .collect::<Vec<_>>()
            .join(", "),
    );
}

/// `text` (recall's SKILL.md) with variant `v`'s numbers: `kK` the RRF k, `mM` the
/// memory source's weight (a superseded memory a quarter of it), `sS` semantic-search's
/// and `wW` search-conversations' weight.
fn patch(text: &str, v: &str) -> Result<String> {
    let mut out = text.to_owned();
    for part in v.split(':') {
        if part == "nodup" {
            let line = out
                .lines()
                .find(|l| l.trim_start().starts_with("near_duplicates:"))
                .with_context(|| {
                    format!("variant `{v}`: recall's SKILL.md has no `near_duplicates`")
                })?
                .to_owned();
            out = out.replace(&format!("{line}\n"), "");
            continue;
        }
        let bad = || format!("variant `{v}`: `{part}` is not kK, mM, sS, wW, oO, nN or nodup");
        let (key, num) = part.split_at_checked(1).with_context(bad)?;
        let x: f64 = num.parse().with_context(bad)?;
        match key {
            "k" => replace_after(
                &mut out,
                "fuse:",
                "{method: rrf, k: 60}",
                &format!("{{method: rrf, k: {x}}}"),
            )?,
            "m" => replace_after(
                &mut out,
                "- skill: memo-search",
                "weight: \"{{ 0.25 if row.superseded_by else 1.0 }}\"",
                &format!(
                    "weight: \"{{{{ {} if row.superseded_by else {x} }}}}\"",
                    0.25 * x
                ),
            )?,
            "s" => replace_after(
                &mut out,
                "- skill: semantic-search",
                "weight: 1.0\n",
                &format!("weight: {x}\n"),
            )?,
            "w" => replace_after(
                &mut out,
                "- skill: search-conversations",
                "weight: 1.0\n",
                &format!("weight: {x}\n"),
            )?,
            "o" | "n" => {
                let at = out.find("near_duplicates: {").with_context(|| {
                    format!("variant `{v}`: recall's SKILL.md has no `near_duplicates`")
                })?;
                let end = at + out[at..].find('}').unwrap_or(0) + 1;
                let (mut overlap, mut min_words) = (String::new(), String::new());
                for field in out[at + "near_duplicates: {".len()..end - 1].split(',') {
                    match field.split_once(':') {
                        Some((k, x)) if k.trim() == "overlap" => overlap = x.trim().to_owned(),
                        Some((k, x)) if k.trim() == "min_words" => min_words = x.trim().to_owned(),
                        _ => {}
                    }
                }
                if key == "o" {
                    overlap = num.to_owned();
                } else {
                    min_words = num.to_owned();
                }
                out.replace_range(
                    at..end,
                    &format!("near_duplicates: {{overlap: {overlap}, min_words: {min_words}}}"),
                );
            }
            _ => bail!(bad()),
        }
    }
    Ok(out)
}

/// Replaces in `out` the first `from` after `anchor` (the start of a source's entry).
fn replace_after(out: &mut String, anchor: &str, from: &str, to: &str) -> Result<()> {
    let at = out
        .find(anchor)
        .and_then(|a| out[a..].find(from).map(|i| a + i))
        .with_context(|| format!("recall's SKILL.md has no `{from}` after `{anchor}`"))?;
    out.replace_range(at..at + from.len(), to);
    Ok(())
}

fn write_lines(path: &Path, records: &[Value]) -> Result<()> {
    let lines: Vec<String> = records.iter().map(Value::to_string).collect();
    std::fs::write(path, lines.join("\n") + "\n")?;
    Ok(())
}
