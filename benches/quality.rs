//! Retrieval quality of `memo-search` on LoCoMo (dev half): R@1/5/10 and MRR per
//! unit (session, turn), haystack (per-conversation, pooled), mode and LoCoMo
//! category, with a plain BM25 baseline computed on the same units.
//!
//! Run: `cargo bench --bench quality` (or `scripts/quality`). Reads
//! `$SKILLS_CORPUS_DIR/locomo/locomo-dev.json`, else `../shared/corpus/locomo/…`
//! (skipped, saying so, when absent). Each unit set is written as JSON Lines and
//! imported by the real memory importer (`import_paths_with`, embeddings included)
//! into fresh stores under `$BENCH_DIR/quality/<model>` (default
//! `$CARGO_TARGET_DIR/bench-data/quality`); every question goes through
//! [`Host::call`] with `limit` 10.
//!
//! Environment: `QUALITY_MODES` (comma-separated variants: `default`, a mode name, or
//! `hybrid:VEC:BM25:none|WINDOW:WEIGHT[:mm][:tB][:plain]`; default [`MODES`]), `QUALITY_UNITS`
//! (`session,turn`), `QUALITY_HAYSTACKS` (`conversation,pooled`), `QUALITY_MISSES`
//! (print up to N questions the default mode misses at 5 and plain BM25 finds),
//! `QUALITY_PREVIOUS` (the variant the intervals compare with, default [`PREVIOUS`]),
//! `QUALITY_MODES=loo` measures [`LOO_GRID`] (the default and a small grid around it);
//! with two modes or more the harness prints, per haystack, the leave-one-conversation-out
//! choice (the mode with the best R@5 summed over the units on the other conversations,
//! scored on the held-out one) beside the default's whole-half R@5
//! (`QUALITY_MODES=loo QUALITY_HAYSTACKS=conversation cargo bench --bench quality`);
//! `QUALITY_REUSE=1` (import into the previous run's stores of the same model instead
//! of fresh ones: nothing is re-embedded).
//! MRR is MRR@10 (a question with no relevant unit in the top 10 counts 0). R@5 is
//! also the client protocol of issue 44 (the five hits of one call with `limit` 5):
//! memo-search's ranking does not depend on `limit`, so the first five hits of the
//! `limit` 10 call are those hits (`tests/limit_prefix.rs`).
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::cast_precision_loss)]

mod common;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context as _, Result};
use serde_json::{json, Value};
use skills::bench::locomo::{self, Question, Unit};
use skills::embed::Embedder;
use skills::engines::memo_search::{self, Norm, Tuning};
use skills::engines::Context;
use skills::host::Host;
use skills::ingest::memories::import_paths_with;
use skills::stores::memories::MemoryStore;
use skills::stores::StorePaths;

const K: usize = 10;
/// `default` (no `mode` argument, the shipped tuning), the previous default
/// ([`PREVIOUS`]), and the seed's single modes.
const MODES: &str = "default,hybrid:0.3:1:2:0.5:t0:plain,vec,bm25,exact,fuzzy";
/// The variant the intervals compare against (`QUALITY_PREVIOUS` overrides it): the
/// previous default with the static table, before stemming and temporal routing.
const PREVIOUS: &str = "hybrid:0.3:1:2:0.5:t0:plain";
const BASELINE: &str = "plain BM25";
/// `QUALITY_MODES=loo`: the shipped default and a small grid around each of its
/// constants (vec weight 0.3, bm25 weight 1, context window 2 and weight 0.5, temporal
/// boost 0.5), for the leave-one-conversation-out choice.
const LOO_GRID: &str = "default,hybrid:0.2:1:2:0.5,hybrid:0.4:1:2:0.5,hybrid:0.3:1:1:0.5,\
hybrid:0.3:1:3:0.5,hybrid:0.3:1:2:0.3,hybrid:0.3:1:2:0.7,hybrid:0.3:1:2:0.5:t0.25,\
hybrid:0.3:1:2:0.5:t1";

/// Where each question's first relevant unit came (1-based), `None` past the top 10.
#[derive(Default)]
struct Tally {
    ranks: Vec<(u8, Option<usize>)>,
}

impl Tally {
    fn push(&mut self, category: u8, rank: Option<usize>) {
        self.ranks.push((category, rank));
    }

    fn of(&self, category: Option<u8>) -> Vec<Option<usize>> {
        self.ranks
            .iter()
            .filter(|(c, _)| category.is_none_or(|x| x == *c))
            .map(|(_, r)| *r)
            .collect()
    }

    fn recall(&self, k: usize, category: Option<u8>) -> f64 {
        let r = self.of(category);
        r.iter().filter(|x| x.is_some_and(|x| x <= k)).count() as f64 / r.len().max(1) as f64
    }

    fn mrr(&self) -> f64 {
        let r = self.of(None);
        r.iter()
            .map(|x| x.map_or(0.0, |x| 1.0 / x as f64))
            .sum::<f64>()
            / r.len().max(1) as f64
    }
}

/// One haystack: a store and the questions that search it.
struct Haystack {
    name: &'static str,
    host: Host,
    /// `(conversation index, question)`.
    questions: Vec<(usize, Question)>,
    /// The units' text, by id, for the plain BM25 baseline.
    docs: Vec<(String, String)>,
}

fn main() -> Result<()> {
    if std::env::args().any(|a| a == "--list") {
        return Ok(());
    }
    let Some(file) = locomo::corpus_file() else {
        println!(
            "## memo-search retrieval quality (LoCoMo)\n\nskipped: locomo/locomo-dev.json not found \
             under $SKILLS_CORPUS_DIR or ../shared/corpus\n"
        );
        return Ok(());
    };
    let convs = locomo::load(&file)?;
    let embedder = match Embedder::load_default() {
        Ok(e) => Some(Arc::new(e)),
        Err(e) => {
            eprintln!("note: {e}: vec and hybrid's vec leg are not measured");
            None
        }
    };
    let modes = match common::env_list("QUALITY_MODES", MODES).as_slice() {
        [one] if one == "loo" => LOO_GRID.split(',').map(str::to_owned).collect(),
        modes => modes.to_vec(),
    };
    let previous = std::env::var("QUALITY_PREVIOUS").unwrap_or_else(|_| PREVIOUS.to_owned());
    let units: Vec<Unit> = common::env_list("QUALITY_UNITS", "session,turn")
        .iter()
        .map(|u| match u.as_str() {
            "turn" => Unit::Turn,
            _ => Unit::Session,
        })
        .collect();
    let haystacks = common::env_list("QUALITY_HAYSTACKS", "conversation,pooled");
    let misses = common::env_usize("QUALITY_MISSES", 0);
    // One folder per model: with `QUALITY_REUSE=1` the stores of an earlier run with
    // the same model are imported into again (nothing changes, nothing is re-embedded),
    // so a sweep over tunings does not pay the second tier's embedding each time.
    let root = common::model_dir("quality", embedder.as_ref().map_or("none", |e| e.name()));
    if std::env::var("QUALITY_REUSE").as_deref() != Ok("1") {
        let _ = std::fs::remove_dir_all(&root);
    }
    let skills_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("skills");

    let questions: usize = convs.iter().map(|c| c.questions.len()).sum();
    let dropped: usize = convs.iter().map(|c| c.dropped_questions).sum();
    println!("## memo-search retrieval quality (LoCoMo dev half)\n");
    println!(
        "{} conversations, {questions} questions with evidence ({dropped} without a valid evidence id left out); \
         model `{}`; top {K} per call through `Host::call`.\n",
        convs.len(),
        embedder.as_ref().map_or("none", |e| e.name()),
    );

    let mut summary: Vec<Vec<String>> = Vec::new();
    // Leave one conversation out: per haystack, the conversation of each question and,
    // per mode, its R@5 hits per unit (the questions are in the same order in every unit).
    let mut groups: BTreeMap<&'static str, Vec<usize>> = BTreeMap::new();
    let mut hits: BTreeMap<(&'static str, String), Vec<Vec<bool>>> = BTreeMap::new();
    for unit in &units {
        let unit = *unit;
        // Source files, one per conversation, in the importer's JSON Lines format.
        let src = root.join(unit.as_str()).join("src");
        std::fs::create_dir_all(&src)?;
        let mut files = Vec::new();
        let mut texts: Vec<Vec<(String, String)>> = Vec::new();
        for c in &convs {
            let records = c.memory_records(unit);
            let path = src.join(format!("{}.jsonl", c.id));
            let lines: Vec<String> = records.iter().map(Value::to_string).collect();
            std::fs::write(&path, lines.join("\n") + "\n")?;
            files.push(path);
            texts.push(
                records
                    .iter()
                    .map(|r| {
                        let text = format!(
                            "{}\n{}",
                            r["title"].as_str().unwrap_or(""),
                            r["body"].as_str().unwrap_or("")
                        );
                        (r["id"].as_str().unwrap_or("").to_owned(), text)
                    })
                    .collect(),
            );
        }
        let mut stacks: Vec<Haystack> = Vec::new();
        let mut imported = 0usize;
        let t = Instant::now();
        if haystacks.iter().any(|h| h == "conversation") {
            for (i, c) in convs.iter().enumerate() {
                let dir = root.join(unit.as_str()).join(&c.id);
                imported += import(&dir, std::slice::from_ref(&files[i]), embedder.as_deref())?;
                stacks.push(Haystack {
                    name: "conversation",
                    host: host(&skills_dir, &dir, embedder.clone())?,
                    questions: c.questions.iter().map(|q| (i, q.clone())).collect(),
                    docs: texts[i].clone(),
                });
            }
        }
        if haystacks.iter().any(|h| h == "pooled") {
            let dir = root.join(unit.as_str()).join("pooled");
            imported += import(&dir, &files, embedder.as_deref())?;
            stacks.push(Haystack {
                name: "pooled",
                host: host(&skills_dir, &dir, embedder.clone())?,
                questions: convs
                    .iter()
                    .enumerate()
                    .flat_map(|(i, c)| c.questions.iter().map(move |q| (i, q.clone())))
                    .collect(),
                docs: texts.concat(),
            });
        }
        let secs = t.elapsed().as_secs_f64();
        eprintln!(
            "{}: {imported} memories imported in {secs:.1} s ({:.0}/s, embeddings included)",
            unit.as_str(),
            imported as f64 / secs
        );

        for haystack in ["conversation", "pooled"] {
            let stacks: Vec<&Haystack> = stacks.iter().filter(|s| s.name == haystack).collect();
            if stacks.is_empty() {
                continue;
            }
            let mut tallies: BTreeMap<String, Tally> = BTreeMap::new();
            let mut baseline_ranks: HashMap<(usize, String), Option<usize>> = HashMap::new();
            let mut missed: Vec<String> = Vec::new();
            for s in &stacks {
                let bm25 = common::plain_bm25::PlainBm25::new(&s.docs);
                for (ci, q) in &s.questions {
                    let relevant = convs[*ci].relevant(unit, q);
                    let ranked = bm25.rank(&q.question, K);
                    let r = first_relevant(&ranked, &relevant);
                    tallies
                        .entry(BASELINE.to_owned())
                        .or_default()
                        .push(q.category, r);
                    baseline_ranks.insert((*ci, q.question.clone()), r);
                }
            }
            for mode in &modes {
                if mode == "vec" && embedder.is_none() {
                    continue;
                }
                let tally = tallies.entry(mode.clone()).or_default();
                let (mode_arg, tuning) = variant(mode)?;
                memo_search::tune(tuning);
                for s in &stacks {
                    for (ci, q) in &s.questions {
                        let mut args = json!({"query": q.question, "limit": K});
                        if let Some(m) = &mode_arg {
                            args["mode"] = json!(m);
                        }
                        let out = s
                            .host
                            .call("memo-search", args)
                            .with_context(|| format!("{mode}: `{}`", q.question))?;
                        let ids: Vec<String> = out.data["hits"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(|h| h["id"].as_str().map(str::to_owned))
                            .collect();
                        let relevant = convs[*ci].relevant(unit, q);
                        let r = first_relevant(&ids, &relevant);
                        tally.push(q.category, r);
                        if mode == "default"
                            && missed.len() < misses
                            && r.is_none_or(|r| r > 5)
                            && baseline_ranks
                                .get(&(*ci, q.question.clone()))
                                .copied()
                                .flatten()
                                .is_some_and(|b| b <= 5)
                        {
                            missed.push(format!(
                                "- `{}` (cat {}, relevant {:?}, default rank {r:?}): top 5 {:?}",
                                q.question,
                                q.category,
                                relevant,
                                &ids[..ids.len().min(5)]
                            ));
                        }
                    }
                }
            }
            memo_search::tune(None);
            let name = if haystack == "pooled" {
                "pooled"
            } else {
                "conversation"
            };
            groups.insert(
                name,
                stacks
                    .iter()
                    .flat_map(|s| s.questions.iter().map(|(ci, _)| *ci))
                    .collect(),
            );
            for mode in &modes {
                if let Some(t) = tallies.get(mode) {
                    hits.entry((name, mode.clone())).or_default().push(
                        t.ranks
                            .iter()
                            .map(|r| r.1.is_some_and(|x| x <= 5))
                            .collect(),
                    );
                }
            }
            print_tables(unit, haystack, &tallies, &modes);
            for m in &missed {
                println!("{m}");
            }
            if !missed.is_empty() {
                println!();
            }
            if let Some(default) = tallies.get("default") {
                let best = tallies
                    .iter()
                    .filter(|(m, _)| {
                        !m.starts_with("hybrid")
                            && m.as_str() != "default"
                            && m.as_str() != BASELINE
                    })
                    .max_by(|a, b| a.1.recall(5, None).total_cmp(&b.1.recall(5, None)));
                if let Some((name, best)) = best {
                    summary.push(vec![
                        unit.as_str().to_owned(),
                        haystack.to_owned(),
                        format!("{:.3}", default.recall(5, None)),
                        format!("{name} {:.3}", best.recall(5, None)),
                        format!(
                            "{:.3}",
                            tallies.get(BASELINE).map_or(0.0, |b| b.recall(5, None))
                        ),
                        tallies.get(previous.as_str()).map_or(String::new(), |p| {
                            let (lo, hi) = paired_bootstrap(p, default, 5);
                            format!("{:.3} (Δ CI {lo:+.3}…{hi:+.3})", p.recall(5, None))
                        }),
                    ]);
                }
            }
        }
    }
    for (haystack, groups) in &groups {
        let scored: Vec<common::Scored<'_>> = modes
            .iter()
            .filter_map(|m| {
                Some(common::Scored {
                    name: m,
                    hits: hits.get(&(*haystack, m.clone()))?.clone(),
                })
            })
            .collect();
        if scored.len() < 2 {
            continue;
        }
        let Some(held) = common::leave_one_out(groups, &scored) else {
            continue;
        };
        let unit_names: Vec<&str> = units.iter().map(|u| u.as_str()).collect();
        let share = |h: &[bool]| h.iter().filter(|x| **x).count() as f64 / h.len().max(1) as f64;
        let default = scored.iter().find(|s| s.name == "default").map_or_else(
            || "—".to_owned(),
            |d| {
                d.hits
                    .iter()
                    .map(|h| format!("{:.3}", share(h)))
                    .collect::<Vec<_>>()
                    .join(" / ")
            },
        );
        let fmt = |v: &[f64]| {
            v.iter()
                .map(|x| format!("{x:.3}"))
                .collect::<Vec<_>>()
                .join(" / ")
        };
        println!(
            "Leave one conversation out ({haystack} haystack; R@5 {}): the mode with the best \
             summed R@5 on the other conversations, scored on the held-out one — chosen {:?}; \
             held-out **{}** (mean of the folds {}); `default` on the whole half {default}.\n",
            unit_names.join(" / "),
            held.chosen,
            fmt(&held.held),
            fmt(&held.fold_mean),
        );
    }
    if !summary.is_empty() {
        println!("### Default vs best single mode (R@5)\n");
        common::table(
            &[
                "unit",
                "haystack",
                "default",
                "best single mode",
                BASELINE,
                "previous default (paired bootstrap 95 % CI of default − previous)",
            ],
            &summary,
        );
    }
    Ok(())
}

fn print_tables(unit: Unit, haystack: &str, tallies: &BTreeMap<String, Tally>, modes: &[String]) {
    println!(
        "### unit `{}`, {} haystack\n",
        unit.as_str(),
        if haystack == "pooled" {
            "pooled"
        } else {
            "per-conversation"
        }
    );
    let order: Vec<&String> = modes
        .iter()
        .chain(std::iter::once(&BASELINE.to_owned()))
        .filter_map(|m| tallies.get_key_value(m).map(|(k, _)| k))
        .collect();
    let mut rows = Vec::new();
    let mut cats: Vec<u8> = tallies
        .values()
        .next()
        .map(|t| t.ranks.iter().map(|r| r.0).collect())
        .unwrap_or_default();
    cats.sort_unstable();
    cats.dedup();
    for m in &order {
        let t = &tallies[*m];
        let mut row = vec![
            (*m).clone(),
            format!("{:.3}", t.recall(1, None)),
            format!("{:.3}", t.recall(5, None)),
            format!("{:.3}", t.recall(10, None)),
            format!("{:.3}", t.mrr()),
        ];
        for c in &cats {
            row.push(format!("{:.3}", t.recall(5, Some(*c))));
        }
        rows.push(row);
    }
    let counts: Vec<String> = cats
        .iter()
        .map(|c| {
            let n = tallies.values().next().map_or(0, |t| t.of(Some(*c)).len());
            format!("R@5 cat {c} ({n})")
        })
        .collect();
    let mut header: Vec<&str> = vec!["mode", "R@1", "R@5", "R@10", "MRR"];
    header.extend(counts.iter().map(String::as_str));
    common::table(&header, &rows);
}

/// `(mode argument, tuning)` of a `QUALITY_MODES` entry: `default` (no mode argument),
/// a mode name, or `hybrid:VEC:BM25:none` / `hybrid:VEC:BM25:WINDOW:WEIGHT`, either
/// with a part `mm` for min-max normalisation of the vec leg ([`Norm::MinMax`]) and a
/// part `tB` for the temporal routing's boost (`t0`: none), and a last part `plain`
/// for the bm25 leg without stemming.
fn variant(name: &str) -> Result<(Option<String>, Option<Tuning>)> {
    let mut p: Vec<&str> = name.split(':').collect();
    let stemmed = if p.len() > 1 && p.last() == Some(&"plain") {
        p.pop();
        false
    } else {
        memo_search::STEMMED
    };
    let temporal_boost = common::temporal_boost(&mut p, name, true)?;
    let vec_norm = if p.last() == Some(&"mm") {
        p.pop();
        Norm::MinMax
    } else {
        Norm::Best
    };
    if p.len() == 1 {
        return Ok(((name != "default").then(|| name.to_owned()), None));
    }
    let num = |i: usize| -> Result<f64> {
        p.get(i)
            .with_context(|| format!("variant `{name}`: part {} missing", i + 1))?
            .parse()
            .with_context(|| format!("variant `{name}`: part {} is not a number", i + 1))
    };
    let context = if p.get(3) == Some(&"none") {
        None
    } else {
        Some(memo_search::Around {
            window: num(3)? as usize,
            weight: num(4)?,
        })
    };
    Ok((
        Some(p[0].to_owned()),
        Some(Tuning {
            vec_weight: num(1)?,
            bm25_weight: num(2)?,
            context,
            vec_norm,
            temporal_boost,
            stemmed,
            candidates: memo_search::CANDIDATES,
        }),
    ))
}

/// Paired bootstrap interval of R@k(`b`) − R@k(`a`) over the same questions (in the
/// same order; [`common::paired_bootstrap`]).
fn paired_bootstrap(a: &Tally, b: &Tally, k: usize) -> (f64, f64) {
    let hits = |t: &Tally| -> Vec<bool> {
        t.ranks
            .iter()
            .map(|r| r.1.is_some_and(|x| x <= k))
            .collect()
    };
    common::paired_bootstrap(&hits(a), &hits(b))
}

fn first_relevant(ids: &[String], relevant: &[String]) -> Option<usize> {
    ids.iter()
        .position(|id| relevant.contains(id))
        .map(|p| p + 1)
}

/// Imports `files` into a fresh store in `dir`; returns the memories stored.
fn import(dir: &Path, files: &[PathBuf], embedder: Option<&Embedder>) -> Result<usize> {
    std::fs::create_dir_all(dir)?;
    let store = MemoryStore::open_rw(&StorePaths::in_dir(dir).memories)?;
    let summary = import_paths_with(&store, files, embedder)?;
    if !summary.faults.is_empty() {
        bail!("import faults: {}", summary);
    }
    Ok(summary.memories)
}

fn host(skills_dir: &Path, dir: &Path, embedder: Option<Arc<Embedder>>) -> Result<Host> {
    let host = Host::load(
        skills_dir,
        Context::new(StorePaths::in_dir(dir)).with_embedder(embedder),
    );
    if host.get("memo-search").is_none() {
        bail!("skill `memo-search` did not load: {:?}", host.diagnostics());
    }
    Ok(host)
}
