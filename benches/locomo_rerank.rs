//! rerank on LoCoMo (dev half, `$SKILLS_CORPUS_DIR/locomo/`, else
//! `../shared/corpus/locomo/`): another retriever's top 20 — the README's plain BM25
//! (k1 1.2, b 0.75, lowercase word tokens), per conversation — reordered by one
//! `Host::call("rerank", …)` per question, each candidate a text item (the unit's
//! title and body, as `benches/quality.rs` imports them).
//!
//! Units: `turn` (each turn a candidate; turn R@5 counts a question when one of the
//! first five rows is an evidence turn, session R@5 when one of them is a turn of an
//! evidence session, the client protocol of issue 44) and `session` (each session a
//! candidate; session R@5). Beside each variant: plain BM25's own R@5 on the same top
//! 20 (its first five), the paired bootstrap 95 % interval of variant − plain BM25,
//! R@1, MRR@20, and the time of one call with its 20 items (median, p95).
//!
//! Run: `cargo bench --bench locomo_rerank` (or `scripts/bench locomo_rerank`).
//! `RERANK_VARIANTS` (comma-separated, default [`VARIANTS`]): `default` (no `scorer`
//! argument, the shipped tuning), `bm25`, `semantic`, `fusion` (the `scorer` argument
//! with the shipped tuning), or `fusion:SEM:BM25[:best][:rrfK][:bB]` (a [`Tuning`]:
//! weights of the semantic and bm25 parts, cosines over their best instead of min-max,
//! reciprocal-rank fusion with k instead of normalised scores, BM25's b).
//! `RERANK_MODELS` (`static,deep`; default both when the second tier is fetched): the
//! embedding model the semantic part runs (`deep`: multilingual-e5-small).
//! `RERANK_UNITS` (`turn,session`), `RERANK_DEPTH` (20): candidates per question;
//! `RERANK_EVERY` (1): measure every n-th question of each conversation only (the
//! second tier embeds 20 texts per call, ~0.5 s on 2 cores).
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::cast_precision_loss)]

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};
use serde_json::{json, Value};
use skills::bench::locomo::{self, Unit};
use skills::embed::{Embedder, Tier};
use skills::engines::rerank::{self, Tuning};
use skills::engines::{Context, Norm};
use skills::host::Host;
use skills::stores::StorePaths;

/// The variants measured by default: the shipped default, each scorer alone, and the
/// fusions the default was chosen among.
const VARIANTS: &str = "default,bm25,semantic,fusion:0.3:1,fusion:0.4:1,fusion:0.7:1,fusion:1:1,fusion:1:0.5,fusion:0.5:1:best,fusion:1:1:rrf60,fusion:0.5:1:b0.75";
const BASELINE: &str = "plain BM25";

/// One question's outcome under one ranking.
#[derive(Debug, Clone, Copy, Default)]
struct Outcome {
    /// 1-based rank of the first relevant unit (turn unit: evidence turn), if any.
    first: Option<usize>,
    /// Turn unit: an evidence session among the first five rows.
    session_at_5: bool,
}

#[derive(Default)]
struct Tally {
    /// `(category, outcome)` per question, in question order.
    outcomes: Vec<(u8, Outcome)>,
    /// The conversation (index) of each question, parallel to `outcomes`.
    convs: Vec<usize>,
    times: Vec<Duration>,
}

impl Tally {
    fn at(&self, k: usize) -> Vec<bool> {
        self.outcomes
            .iter()
            .map(|(_, o)| o.first.is_some_and(|r| r <= k))
            .collect()
    }

    fn recall(&self, k: usize) -> f64 {
        share(&self.at(k))
    }

    fn sessions(&self) -> Vec<bool> {
        self.outcomes.iter().map(|(_, o)| o.session_at_5).collect()
    }

    fn mrr(&self) -> f64 {
        self.outcomes
            .iter()
            .map(|(_, o)| o.first.map_or(0.0, |r| 1.0 / r as f64))
            .sum::<f64>()
            / self.outcomes.len().max(1) as f64
    }

    fn category(&self, c: u8) -> f64 {
        share(
            &self
                .outcomes
                .iter()
                .filter(|(x, _)| *x == c)
                .map(|(_, o)| o.first.is_some_and(|r| r <= 5))
                .collect::<Vec<_>>(),
        )
    }
}

fn share(hits: &[bool]) -> f64 {
    hits.iter().filter(|h| **h).count() as f64 / hits.len().max(1) as f64
}

fn main() -> Result<()> {
    if std::env::args().any(|a| a == "--list") {
        return Ok(());
    }
    let Some(file) = locomo::corpus_file() else {
        println!(
            "## rerank on LoCoMo\n\nskipped: locomo/locomo-dev.json not found under \
             $SKILLS_CORPUS_DIR or ../shared/corpus\n"
        );
        return Ok(());
    };
    let convs = locomo::load(&file)?;
    let deep_here = Embedder::default_dir().is_some_and(|d| d.join("e5").is_dir());
    let models = common::env_list(
        "RERANK_MODELS",
        if deep_here { "static,deep" } else { "static" },
    );
    let variants = common::env_list("RERANK_VARIANTS", VARIANTS);
    let units = common::env_list("RERANK_UNITS", "turn,session");
    let depth = common::env_usize("RERANK_DEPTH", 20);
    let every = common::env_usize("RERANK_EVERY", 1).max(1);
    let skills_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("skills");
    let data = tempfile::tempdir()?;

    let questions: usize = convs
        .iter()
        .map(|c| c.questions.len().div_ceil(every))
        .sum();
    println!("## rerank on LoCoMo (dev half)\n");
    println!(
        "{} conversations, {questions} questions; plain BM25's top {depth} per question \
         (per-conversation haystack) reranked by one `rerank` call; {}.\n",
        convs.len(),
        common::machine()
    );
    let mut summary: Vec<Vec<String>> = Vec::new();
    for model in &models {
        let embedder = Arc::new(match model.as_str() {
            "deep" => Embedder::load_tier(Tier::Deep),
            _ => Embedder::load_tier(Tier::Static),
        }?);
        let host = Host::load(
            &skills_dir,
            Context::new(StorePaths::in_dir(data.path())).with_embedder(Some(embedder.clone())),
        );
        if host.get("rerank").is_none() {
            bail!("skill `rerank` did not load: {:?}", host.diagnostics());
        }
        for unit in &units {
            let unit = if unit == "session" {
                Unit::Session
            } else {
                Unit::Turn
            };
            let mut tallies: BTreeMap<String, Tally> = BTreeMap::new();
            for (ci, c) in convs.iter().enumerate() {
                let docs: Vec<(String, String)> = c
                    .memory_records(unit)
                    .iter()
                    .map(|r| {
                        let text = format!(
                            "{}\n{}",
                            r["title"].as_str().unwrap_or(""),
                            r["body"].as_str().unwrap_or("")
                        );
                        (r["id"].as_str().unwrap_or("").to_owned(), text)
                    })
                    .collect();
                let text_of: BTreeMap<&str, &str> = docs
                    .iter()
                    .map(|(id, t)| (id.as_str(), t.as_str()))
                    .collect();
                let bm25 = common::plain_bm25::PlainBm25::new(&docs);
                for q in c.questions.iter().step_by(every) {
                    let relevant = c.relevant(unit, q);
                    let sessions = c.relevant(Unit::Session, q);
                    let outcome = |ids: &[String]| Outcome {
                        first: ids
                            .iter()
                            .position(|id| relevant.contains(id))
                            .map(|p| p + 1),
                        session_at_5: ids
                            .iter()
                            .take(5)
                            .any(|id| sessions.contains(&session_of(c, unit, id))),
                    };
                    let top = bm25.rank(&q.question, depth);
                    let base = tallies.entry(BASELINE.to_owned()).or_default();
                    base.outcomes.push((q.category, outcome(&top)));
                    base.convs.push(ci);
                    for v in &variants {
                        let (scorer, tuning) = variant(v)?;
                        let ids = if top.is_empty() {
                            Vec::new()
                        } else {
                            let items: Vec<Value> = top
                                .iter()
                                .map(|id| json!({"id": id, "text": text_of[id.as_str()]}))
                                .collect();
                            let mut args = json!({
                                "query": q.question, "items": items, "limit": depth, "text_chars": 0,
                            });
                            if let Some(s) = &scorer {
                                args["scorer"] = json!(s);
                            }
                            rerank::tune(tuning);
                            let t = Instant::now();
                            let out = host
                                .call("rerank", args)
                                .with_context(|| format!("{v}: `{}`", q.question))?;
                            tallies
                                .entry(v.clone())
                                .or_default()
                                .times
                                .push(t.elapsed());
                            rerank::tune(None);
                            out.data["rows"]
                                .as_array()
                                .into_iter()
                                .flatten()
                                .filter_map(|r| r["id"].as_str().map(str::to_owned))
                                .collect()
                        };
                        let t = tallies.entry(v.clone()).or_default();
                        t.outcomes.push((q.category, outcome(&ids)));
                        t.convs.push(ci);
                    }
                }
            }
            print_table(unit, model, &tallies, &variants, &mut summary);
            cross_validate(unit, convs.len(), &tallies, &variants);
        }
    }
    println!("### Summary: R@5 of plain BM25's top {depth}, before and after rerank\n");
    common::table(
        &[
            "model",
            "unit",
            "variant",
            "R@5 turn (unit)",
            "R@5 session",
            "Δ R@5 (95 % CI)",
            "ms per call (p50 / p95)",
        ],
        &summary,
    );
    Ok(())
}

/// Leave one conversation out: for each conversation, the variant with the best R@5
/// on the other conversations' questions, measured on that conversation's; prints the
/// choices and the held-out R@5 (questions of all folds together) beside the default's
/// and plain BM25's on the same questions.
fn cross_validate(unit: Unit, n: usize, tallies: &BTreeMap<String, Tally>, variants: &[String]) {
    let r5 = |t: &Tally, keep: &dyn Fn(usize) -> bool| -> (usize, usize) {
        t.outcomes
            .iter()
            .zip(&t.convs)
            .filter(|(_, c)| keep(**c))
            .fold((0, 0), |(h, n), ((_, o), _)| {
                (h + usize::from(o.first.is_some_and(|r| r <= 5)), n + 1)
            })
    };
    let mut chosen = Vec::new();
    let (mut held, mut total) = (0, 0);
    for fold in 0..n {
        // The best R@5 on the other conversations; ties: the earlier variant listed.
        let mut best: Option<(&String, &Tally, f64)> = None;
        for v in variants {
            let Some(t) = tallies.get(v) else { continue };
            let (h, q) = r5(t, &|c| c != fold);
            let r = h as f64 / q.max(1) as f64;
            if best.is_none_or(|b| r > b.2) {
                best = Some((v, t, r));
            }
        }
        let Some((name, t, _)) = best else { return };
        let (h, q) = r5(t, &|c| c == fold);
        held += h;
        total += q;
        chosen.push(name.as_str());
    }
    let all = |name: &str| {
        tallies.get(name).map_or(String::from("—"), |t| {
            let (h, q) = r5(t, &|_| true);
            format!("{:.3}", h as f64 / q.max(1) as f64)
        })
    };
    println!(
        "Leave one conversation out (unit `{}`): chosen per held-out conversation {:?}; \
         held-out R@5 {:.3} (default {}, plain BM25 {} on the same questions).\n",
        unit.as_str(),
        chosen,
        held as f64 / total.max(1) as f64,
        all("default"),
        all(BASELINE),
    );
}

/// The session id (`<conv>/S<n>`) of a unit id of `unit`.
fn session_of(c: &locomo::Conversation, unit: Unit, id: &str) -> String {
    match unit {
        Unit::Session => id.to_owned(),
        Unit::Turn => {
            let dia = id.rsplit('/').next().unwrap_or("");
            c.unit_id(Unit::Session, dia)
        }
    }
}

fn print_table(
    unit: Unit,
    model: &str,
    tallies: &BTreeMap<String, Tally>,
    variants: &[String],
    summary: &mut Vec<Vec<String>>,
) {
    println!("### unit `{}`, model `{model}`\n", unit.as_str());
    let base = &tallies[BASELINE];
    let mut cats: Vec<u8> = base.outcomes.iter().map(|(c, _)| *c).collect();
    cats.sort_unstable();
    cats.dedup();
    let mut rows = Vec::new();
    for name in std::iter::once(BASELINE).chain(variants.iter().map(String::as_str)) {
        let Some(t) = tallies.get(name) else { continue };
        let (lo, hi) = common::paired_bootstrap(&base.at(5), &t.at(5));
        let stats = common::Stats::of(t.times.clone());
        let time = if t.times.is_empty() {
            String::new()
        } else {
            format!(
                "{:.2} / {:.2}",
                stats.median.as_secs_f64() * 1e3,
                stats.p95.as_secs_f64() * 1e3
            )
        };
        let session = if unit == Unit::Turn {
            format!("{:.3}", share(&t.sessions()))
        } else {
            String::new()
        };
        let delta = if name == BASELINE {
            String::new()
        } else {
            format!("{:+.3} ({lo:+.3}…{hi:+.3})", t.recall(5) - base.recall(5))
        };
        let mut row = vec![
            name.to_owned(),
            format!("{:.3}", t.recall(1)),
            format!("{:.3}", t.recall(5)),
            session.clone(),
            format!("{:.3}", t.mrr()),
            delta.clone(),
            time.clone(),
        ];
        row.extend(cats.iter().map(|c| format!("{:.3}", t.category(*c))));
        rows.push(row);
        summary.push(vec![
            model.to_owned(),
            unit.as_str().to_owned(),
            name.to_owned(),
            format!("{:.3}", t.recall(5)),
            if unit == Unit::Turn {
                session
            } else {
                format!("{:.3}", t.recall(5))
            },
            delta,
            time,
        ]);
    }
    let counts: Vec<String> = cats
        .iter()
        .map(|c| {
            let n = base.outcomes.iter().filter(|(x, _)| x == c).count();
            format!("R@5 cat {c} ({n})")
        })
        .collect();
    let mut header = vec![
        "variant",
        "R@1",
        "R@5",
        "session R@5 (turn rows)",
        "MRR@20",
        "Δ R@5 vs plain BM25 (95 % CI)",
        "ms per call (p50 / p95)",
    ];
    header.extend(counts.iter().map(String::as_str));
    common::table(&header, &rows);
}

/// `(scorer argument, tuning)` of a `RERANK_VARIANTS` entry.
fn variant(name: &str) -> Result<(Option<String>, Option<Tuning>)> {
    let p: Vec<&str> = name.split(':').collect();
    match p.as_slice() {
        ["default"] => return Ok((None, None)),
        [one] => return Ok((Some((*one).to_owned()), None)),
        _ => {}
    }
    if p[0] != "fusion" || p.len() < 3 {
        bail!("variant `{name}`: expected default, bm25, semantic, fusion or fusion:SEM:BM25[:best][:rrfK][:bB]");
    }
    let num = |s: &str| -> Result<f64> {
        s.parse()
            .with_context(|| format!("variant `{name}`: `{s}` is not a number"))
    };
    let mut t = Tuning {
        semantic_weight: num(p[1])?,
        bm25_weight: num(p[2])?,
        ..Tuning::DEFAULT
    };
    for part in &p[3..] {
        if *part == "best" {
            t.semantic_norm = Norm::Best;
        } else if let Some(k) = part.strip_prefix("rrf") {
            t.rrf_k = Some(num(k)?);
        } else if let Some(b) = part.strip_prefix('b') {
            t.b = num(b)?;
        } else {
            bail!("variant `{name}`: unknown part `{part}`");
        }
    }
    Ok((Some("fusion".into()), Some(t)))
}
