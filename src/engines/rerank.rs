//! Engine `rerank`: reorders hits a caller already has (the seed card's
//! `memo_rerank`).
//!
//! A call gives a query and up to [`MAX_ITEMS`] candidate items, each a text (with an
//! optional caller id) or a reference to a stored unit — a memory by id, a message by
//! `source`, `conversation_id` and `message_id` — read from the stores the skill
//! declares, or with `--archive` from the team archive (every machine's pushed rows,
//! [`crate::archive::lookup`]: a unit several machines pushed is read from its most
//! recently updated copy, then the smallest machine id, and its row names that copy's
//! `machine`, `machine_id` and `user`). Every item is scored against the query by the
//! chosen scorer and the items come back best first, each with its score, its new
//! rank, its position in the input and (with `explain`) the parts of its score:
//!
//! - `semantic`: the cosine of the query's embedding with the item's best chunk (the
//!   local model, chunks of at most 96 words as memories are embedded:
//!   [`crate::embed::Embedder::embed_chunks`]);
//! - `bm25`: BM25 over the candidate set itself (its idf and mean length are the
//!   candidates'), words folded and stemmed as the conversations index posts them
//!   ([`crate::search::words`]);
//! - `fusion` (the default, measured best on LoCoMo: docs/performance.md "Rerank"):
//!   each part's score over its best among the candidates, weighted and summed
//!   ([`Tuning::DEFAULT`]).
//!
//! Ties keep the input order (the lower `position` first), so a call is a pure function
//! of its arguments and the stores, and the first k rows of a call with `limit` n > k
//! are the rows of the call with `limit` k.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use super::{Context, EngineError, Norm};
use crate::archive::lookup::Copy;
use crate::search::{postings, words};
use crate::stores::{Store, StoreError};

/// Most items one call reranks (the input schema's `maxItems`).
pub const MAX_ITEMS: usize = 100;
/// The scorer a call without `scorer` gets: the best measured on LoCoMo.
pub const DEFAULT_SCORER: &str = "fusion";
/// The scorers, as the `scorer` argument names them.
pub const SCORERS: [&str; 3] = ["fusion", "semantic", "bm25"];
/// Fusion's weight of the semantic part (the bm25 part's is [`BM25_WEIGHT`]).
pub const SEMANTIC_WEIGHT: f64 = 0.5;
/// Fusion's weight of the bm25 part.
pub const BM25_WEIGHT: f64 = 1.0;
/// Most query words the bm25 part scores.
const MAX_TERMS: usize = 32;

/// The ranking parameters of `fusion` and the bm25 part, in one place so the quality
/// harness can measure variants ([`tune`]); [`Tuning::DEFAULT`] is what every call uses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tuning {
    /// Weight of the semantic part's share ([`SEMANTIC_WEIGHT`]).
    pub semantic_weight: f64,
    /// Weight of the bm25 part's share ([`BM25_WEIGHT`]).
    pub bm25_weight: f64,
    /// How the cosines are put on one scale before fusion.
    pub semantic_norm: Norm,
    /// `Some(k)`: fuse by reciprocal rank (Σ weight / (k + rank)) instead of
    /// normalised scores.
    pub rrf_k: Option<f64>,
    /// BM25's `k1` (the conversations index's, [`postings::K1`]).
    pub k1: f64,
    /// BM25's `b` (the conversations index's, [`postings::B`]).
    pub b: f64,
}

impl Tuning {
    /// The shipped parameters.
    pub const DEFAULT: Self = Self {
        semantic_weight: SEMANTIC_WEIGHT,
        bm25_weight: BM25_WEIGHT,
        semantic_norm: Norm::MinMax,
        rrf_k: None,
        k1: postings::K1,
        b: postings::B,
    };
}

#[cfg(feature = "bench")]
static TUNING: super::Override<Tuning> = super::Override::new();

/// Replaces [`Tuning::DEFAULT`] for every later call in this process (`None` restores
/// it). For the quality harness (`benches/locomo_rerank.rs`) only (feature `bench`).
#[cfg(feature = "bench")]
pub fn tune(t: Option<Tuning>) {
    TUNING.set(t);
}

fn tuning() -> Tuning {
    #[cfg(feature = "bench")]
    return TUNING.get_or(Tuning::DEFAULT);
    #[cfg(not(feature = "bench"))]
    Tuning::DEFAULT
}

/// The engine (stateless; stores and model come from the [`Context`]).
pub struct Rerank;

/// One candidate as the caller gave it.
#[derive(Debug, Clone, PartialEq)]
enum Item {
    /// A text, with the caller's id when given.
    Text { text: String, id: Option<String> },
    /// A stored memory.
    Memory { id: String },
    /// A stored message.
    Message {
        source: String,
        conversation_id: String,
        message_id: String,
    },
}

/// An [`EngineError::Argument`] on `items` naming item `i` (0-based).
fn item_error(i: usize, reason: impl std::fmt::Display) -> EngineError {
    EngineError::Argument {
        name: "items".into(),
        reason: format!("item {i}: {reason}"),
    }
}

/// Reads item `i` of the `items` argument: exactly one of a text, a `memory_id`, or a
/// message's three keys.
fn parse_item(i: usize, v: &Value) -> Result<Item, EngineError> {
    let field = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    let present = |k: &str| v.get(k).is_some_and(|x| !x.is_null());
    let message_keys = ["source", "conversation_id", "message_id"];
    let forms = usize::from(present("text"))
        + usize::from(present("memory_id"))
        + usize::from(message_keys.iter().any(|k| present(k)));
    let expected = "expected `text` (with an optional `id`), `memory_id`, or `source` + \
                    `conversation_id` + `message_id`";
    if forms != 1 {
        return Err(item_error(i, format!("{expected}, exactly one of them")));
    }
    if let Some(text) = field("text") {
        return Ok(Item::Text {
            text,
            id: field("id"),
        });
    }
    if present("id") {
        return Err(item_error(i, "`id` goes with `text` only"));
    }
    if let Some(id) = field("memory_id") {
        return Ok(Item::Memory { id });
    }
    match message_keys.map(field) {
        [Some(source), Some(conversation_id), Some(message_id)] => Ok(Item::Message {
            source,
            conversation_id,
            message_id,
        }),
        _ => Err(item_error(
            i,
            "a message is named by all three of `source`, `conversation_id` and `message_id`",
        )),
    }
}

/// The items' texts, in input order, and for an item read from the team archive the
/// copy it was read from: texts as given, memories as `title` + body, messages as their
/// content, read from the local stores (each store opened once, and only when an item
/// names it) or, with `--archive`, from the archive ([`resolve_archive`]).
///
/// # Errors
/// An error naming the first item whose memory or message does not exist, or the
/// store's (or archive's) error when it cannot be read.
fn resolve(ctx: &Context, items: &[Item]) -> Result<Resolved, EngineError> {
    let texts: Vec<Option<String>> = items
        .iter()
        .map(|it| match it {
            Item::Text { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect();
    if let Some(pool) = ctx.archive() {
        return resolve_archive(ctx, pool, items, texts);
    }
    resolve_local(ctx, items, texts)
}

/// The texts of [`resolve`], and per item the archive copy it was read from (`None`
/// for a text, and for every item read from the local stores).
type Resolved = (Vec<String>, Vec<Option<Copy>>);

/// The error of item `i` naming a memory the stores do not hold.
fn no_memory(i: usize, id: &str) -> EngineError {
    item_error(i, format!("no memory `{id}`"))
}

/// The error of item `i` naming a message the stores do not hold.
fn no_message(i: usize, [source, conversation_id, message_id]: [&str; 3]) -> EngineError {
    item_error(
        i,
        format!(
            "no message `{message_id}` in conversation `{conversation_id}` of source `{source}`"
        ),
    )
}

/// The message keys of `items`, with their positions.
fn message_keys(items: &[Item]) -> Vec<(usize, [&str; 3])> {
    items
        .iter()
        .enumerate()
        .filter_map(|(i, it)| match it {
            Item::Message {
                source,
                conversation_id,
                message_id,
            } => Some((i, [source.as_str(), conversation_id, message_id])),
            _ => None,
        })
        .collect()
}

/// [`resolve`] on the local stores.
fn resolve_local(
    ctx: &Context,
    items: &[Item],
    mut texts: Vec<Option<String>>,
) -> Result<Resolved, EngineError> {
    let store_error = |i: usize, store: Store, e: StoreError| match e {
        StoreError::Missing { .. } => item_error(
            i,
            format!(
                "names a stored {}, and there is no {store} store yet",
                kind(&items[i])
            ),
        ),
        other => EngineError::Store(other),
    };
    if let Some(first) = items
        .iter()
        .position(|it| matches!(it, Item::Memory { .. }))
    {
        let store = ctx
            .memories()
            .map_err(|e| store_error(first, Store::Memories, e))?;
        for (i, it) in items.iter().enumerate() {
            if let Item::Memory { id } = it {
                ctx.cancel().check().map_err(EngineError::Stopped)?;
                let m = store.get(id)?.ok_or_else(|| no_memory(i, id))?;
                texts[i] = Some(format!("{}\n{}", m.title, m.body));
            }
        }
    }
    let keys = message_keys(items);
    if let Some((first, _)) = keys.first() {
        let store = ctx
            .conversations()
            .map_err(|e| store_error(*first, Store::Conversations, e))?;
        let values = vec!["(?, ?, ?)"; keys.len()].join(", ");
        let sql = format!(
            "SELECT source, conversation_id, message_id, content FROM all_conversations \
             WHERE (source, conversation_id, message_id) IN (SELECT * FROM (VALUES {values}))"
        );
        let params: Vec<&dyn duckdb::ToSql> = keys
            .iter()
            .flat_map(|(_, k)| k.iter().map(|s| s as &dyn duckdb::ToSql))
            .collect();
        let conn = store.connection()?;
        let mut stmt = conn.prepare(&sql).map_err(|e| store.error(e))?;
        let rows = stmt
            .query_map(params.as_slice(), |r| {
                Ok((
                    [r.get::<_, String>(0)?, r.get(1)?, r.get(2)?],
                    r.get::<_, Option<String>>(3)?,
                ))
            })
            .map_err(|e| store.error(e))?;
        let mut found: HashMap<[String; 3], String> = HashMap::new();
        for row in rows {
            let (key, content) = row.map_err(|e| store.error(e))?;
            found.insert(key, content.unwrap_or_default());
        }
        for (i, k) in &keys {
            let text = found
                .get(&k.map(str::to_owned))
                .ok_or_else(|| no_message(*i, *k))?;
            texts[*i] = Some(text.clone());
        }
    }
    let copies = vec![None; items.len()];
    Ok((
        texts.into_iter().map(Option::unwrap_or_default).collect(),
        copies,
    ))
}

/// [`resolve`] on the team archive: every machine's pushed memories and messages, read
/// by their local keys ([`crate::archive::lookup`]); a key several machines pushed is
/// read from its most recently updated copy, then the smallest machine id. The same
/// errors as locally for an item naming what the archive does not hold.
fn resolve_archive(
    ctx: &Context,
    pool: &crate::archive::search::Pool,
    items: &[Item],
    mut texts: Vec<Option<String>>,
) -> Result<Resolved, EngineError> {
    let mut copies = vec![None; items.len()];
    let ids: Vec<(usize, &str)> = items
        .iter()
        .enumerate()
        .filter_map(|(i, it)| match it {
            Item::Memory { id } => Some((i, id.as_str())),
            _ => None,
        })
        .collect();
    if !ids.is_empty() {
        ctx.may_read(Store::Memories)?;
        ctx.cancel().check().map_err(EngineError::Stopped)?;
        let wanted: Vec<&str> = ids.iter().map(|(_, id)| *id).collect();
        let found = crate::archive::lookup::memories(pool, &wanted)?;
        for (i, id) in ids {
            let m = found.get(id).ok_or_else(|| no_memory(i, id))?;
            texts[i] = Some(format!("{}\n{}", m.title, m.body));
            copies[i] = Some(m.copy.clone());
        }
    }
    let keys = message_keys(items);
    if !keys.is_empty() {
        ctx.may_read(Store::Conversations)?;
        ctx.cancel().check().map_err(EngineError::Stopped)?;
        let wanted: Vec<[&str; 3]> = keys.iter().map(|(_, k)| *k).collect();
        let found = crate::archive::lookup::messages(pool, &wanted)?;
        for (i, k) in keys {
            let m = found
                .get(&k.map(str::to_owned))
                .ok_or_else(|| no_message(i, k))?;
            texts[i] = Some(m.content.clone());
            copies[i] = Some(m.copy.clone());
        }
    }
    Ok((
        texts.into_iter().map(Option::unwrap_or_default).collect(),
        copies,
    ))
}

/// `text`, `memory` or `message`.
fn kind(item: &Item) -> &'static str {
    match item {
        Item::Text { .. } => "text",
        Item::Memory { .. } => "memory",
        Item::Message { .. } => "message",
    }
}

/// One text's BM25 and the query terms it holds (term → occurrences).
type Lexical = (f64, Map<String, Value>);

/// BM25 of every text for the query's terms, over the texts themselves as the
/// collection (their idf and mean length): `(score, term → occurrences)` per text.
/// Words are folded and stemmed as the conversations index posts them
/// ([`words::query_terms`]); a text's length counts all its words.
fn bm25(query: &str, texts: &[String], t: &Tuning) -> (Vec<String>, Vec<Lexical>) {
    let terms = words::query_terms(query, MAX_TERMS);
    let mut tfs: Vec<Vec<u32>> = Vec::with_capacity(texts.len());
    let mut lens: Vec<f64> = Vec::with_capacity(texts.len());
    let mut df = vec![0u64; terms.len()];
    for text in texts {
        let mut folded = Vec::with_capacity(text.len());
        crate::search::scan::fold(text, &mut folded);
        let folded = String::from_utf8_lossy(&folded);
        let mut tf = vec![0u32; terms.len()];
        let mut len = 0u32;
        for w in words::words(&folded) {
            len += 1;
            if !words::is_term(w) {
                continue;
            }
            let s = words::stem(w);
            if let Some(j) = terms.iter().position(|t| *t == s) {
                tf[j] += 1;
            }
        }
        for (j, &n) in tf.iter().enumerate() {
            df[j] += u64::from(n > 0);
        }
        tfs.push(tf);
        lens.push(f64::from(len));
    }
    #[allow(clippy::cast_precision_loss)]
    let avg = (lens.iter().sum::<f64>() / texts.len().max(1) as f64).max(1.0);
    let n = texts.len() as u64;
    let scores = tfs
        .iter()
        .zip(&lens)
        .map(|(tf, len)| {
            let mut s = 0.0;
            let mut seen = Map::new();
            for (j, &f) in tf.iter().enumerate() {
                if f == 0 {
                    continue;
                }
                let idf = postings::idf(n, df[j]);
                let f64f = f64::from(f);
                s += idf * f64f * (t.k1 + 1.0) / (f64f + t.k1 * (1.0 - t.b + t.b * len / avg));
                seen.insert(terms[j].clone(), json!(f));
            }
            (s, seen)
        })
        .collect();
    (terms, scores)
}

/// The cosine of `query` with each text's best chunk, and the model's name. The model
/// is [`Context::embedder`]'s: the static table (half a millisecond for 20 turns), the
/// second tier only when `SKILLS_EMBEDDER=deep` asks for it (docs/performance.md
/// "Rerank": seconds per call of 20 turns on 2 cores).
fn cosines(
    ctx: &Context,
    query: &str,
    texts: &[String],
) -> Result<(Vec<f64>, String), EngineError> {
    let embedder = ctx
        .embedder()
        .map_err(|e| EngineError::Unavailable(format!("embedding unavailable: {e}")))?;
    let q = embedder.embed_query(query);
    // Every chunk of every text in one batch (the second tier embeds a batch faster
    // than its texts one by one).
    let mut owner = Vec::new();
    let mut chunks = Vec::new();
    for (i, text) in texts.iter().enumerate() {
        for c in crate::embed::chunks(text) {
            owner.push(i);
            chunks.push(c);
        }
    }
    ctx.cancel().check().map_err(EngineError::Stopped)?;
    let flat = embedder.embed_batch(&chunks);
    let dim = embedder.dim();
    let mut best = vec![f64::NEG_INFINITY; texts.len()];
    for (c, &i) in owner.iter().enumerate() {
        let v = flat.get(c * dim..(c + 1) * dim).unwrap_or(&[]);
        let cos = f64::from(crate::search::vectors::cosine(&q, v));
        best[i] = best[i].max(cos);
    }
    // A text with no known token embeds as zeros: cosine 0.
    let best = best
        .into_iter()
        .map(|c| if c.is_finite() { c } else { 0.0 })
        .collect();
    Ok((best, embedder.name().to_owned()))
}

/// 1-based ranks of `scores` (higher first, ties by index); `None` for the
/// scores `keep` refuses.
fn ranks(scores: &[f64], keep: impl Fn(f64) -> bool) -> Vec<Option<usize>> {
    let mut order: Vec<usize> = (0..scores.len()).filter(|&i| keep(scores[i])).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    let mut out = vec![None; scores.len()];
    for (r, i) in order.into_iter().enumerate() {
        out[i] = Some(r + 1);
    }
    out
}

/// Rounds a score for output (12 significant decimals), so the text and structured
/// output agree across platforms' last-bit differences.
fn round(x: f64) -> f64 {
    (x * 1e12).round() / 1e12
}

impl super::Engine for Rerank {
    fn name(&self) -> &'static str {
        "rerank"
    }

    /// Reads memories and conversations, and only when an item names one.
    fn effects(&self) -> super::Effects {
        super::Effects::reads(&[Store::Memories, Store::Conversations])
    }

    /// Output shape: `{"query", "scorer", "model": str|null, "items": int, "count":
    /// int, "rows": [{"rank", "position", "kind": "text"|"memory"|"message", "id"?,
    /// "source"?, "conversation_id"?, "message_id"?, "text", "text_truncated"?,
    /// "score", "cites"?, "explain"?: {"parts": {..}}}], "note"?, "explain"?}`, best
    /// first.
    fn call(&self, args: &Value, ctx: &Context) -> Result<Value, EngineError> {
        let query = args.get("query").and_then(Value::as_str).unwrap_or("");
        if query.trim().is_empty() {
            return Err(EngineError::Argument {
                name: "query".into(),
                reason: "expected a non-empty text".into(),
            });
        }
        let raw = args
            .get("items")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        if raw.is_empty() || raw.len() > MAX_ITEMS {
            return Err(EngineError::Argument {
                name: "items".into(),
                reason: format!("expected 1 to {MAX_ITEMS} items, got {}", raw.len()),
            });
        }
        let items = raw
            .iter()
            .enumerate()
            .map(|(i, v)| parse_item(i, v))
            .collect::<Result<Vec<_>, _>>()?;
        let limit = args.get("limit").and_then(Value::as_i64).unwrap_or(10);
        let max = i64::try_from(MAX_ITEMS).unwrap_or(i64::MAX);
        if !(1..=max).contains(&limit) {
            return Err(EngineError::Argument {
                name: "limit".into(),
                reason: format!("expected an integer in 1..={MAX_ITEMS}, got {limit}"),
            });
        }
        let limit = usize::try_from(limit).unwrap_or(10);
        let text_chars = args
            .get("text_chars")
            .and_then(Value::as_i64)
            .unwrap_or(280);
        let explain = args
            .get("explain")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let requested = args
            .get("scorer")
            .and_then(Value::as_str)
            .unwrap_or(DEFAULT_SCORER);
        if !SCORERS.contains(&requested) {
            return Err(EngineError::Argument {
                name: "scorer".into(),
                reason: format!("expected one of {}, got `{requested}`", SCORERS.join(", ")),
            });
        }
        let (texts, copies) = resolve(ctx, &items)?;
        let t = tuning();

        let mut note = None;
        let mut scorer = requested;
        let (semantic, model) = if scorer == "bm25" {
            (None, None)
        } else {
            match cosines(ctx, query, &texts) {
                Ok((c, m)) => (Some(c), Some(m)),
                Err(EngineError::Unavailable(why)) if scorer == "fusion" => {
                    note = Some(format!("{why}: scored by bm25 alone"));
                    scorer = "bm25";
                    (None, None)
                }
                Err(e) => return Err(e),
            }
        };
        let (terms, lexical) = if scorer == "semantic" {
            (Vec::new(), Vec::new())
        } else {
            bm25(query, &texts, &t)
        };

        let n = texts.len();
        let bm25_scores: Vec<f64> = lexical.iter().map(|(s, _)| *s).collect();
        let bm25_ranks = ranks(&bm25_scores, |s| s > 0.0);
        let sem_ranks = semantic
            .as_ref()
            .map(|c| ranks(c, |_| true))
            .unwrap_or_default();
        let best_bm25 = bm25_scores.iter().copied().fold(0.0, f64::max);
        let (top_cos, low_cos) = semantic.as_ref().map_or((0.0, 0.0), |c| {
            (
                c.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                c.iter().copied().fold(f64::INFINITY, f64::min),
            )
        });
        let mut scored: Vec<(f64, usize, Map<String, Value>)> = Vec::with_capacity(n);
        for i in 0..n {
            let mut parts = Map::new();
            let mut score = 0.0;
            if let (Some(c), Some(rank)) = (&semantic, sem_ranks.get(i).copied().flatten()) {
                let share = match (scorer, t.rrf_k) {
                    ("semantic", _) => c[i],
                    (_, Some(k)) => t.semantic_weight / (k + rank as f64),
                    _ => t.semantic_weight * t.semantic_norm.apply(c[i], top_cos, low_cos),
                };
                score += share;
                parts.insert(
                    "semantic".into(),
                    json!({"rank": rank, "cosine": round(c[i]), "share": round(share)}),
                );
            }
            if let Some(rank) = bm25_ranks.get(i).copied().flatten() {
                let (s, terms) = &lexical[i];
                let share = match (scorer, t.rrf_k) {
                    ("bm25", _) => *s,
                    (_, Some(k)) => t.bm25_weight / (k + rank as f64),
                    _ => t.bm25_weight * Norm::Best.apply(*s, best_bm25, 0.0),
                };
                score += share;
                parts.insert(
                    "bm25".into(),
                    json!({"rank": rank, "score": round(*s), "share": round(share), "terms": terms}),
                );
            }
            scored.push((score, i, parts));
        }
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));

        let rows: Vec<Value> = scored
            .into_iter()
            .take(limit)
            .enumerate()
            .map(|(r, (score, i, parts))| {
                let mut row = json!({
                    "rank": r + 1,
                    "position": i,
                    "kind": kind(&items[i]),
                    "score": round(score),
                });
                let (text, cut) = cut(&texts[i], text_chars);
                row["text"] = json!(text);
                if cut {
                    row["text_truncated"] = json!(true);
                }
                match &items[i] {
                    Item::Text { id, .. } => {
                        if let Some(id) = id {
                            row["id"] = json!(id);
                        }
                    }
                    Item::Memory { id } => {
                        row["id"] = json!(id);
                        row["cites"] = super::cites_memory(id);
                    }
                    Item::Message {
                        source,
                        conversation_id,
                        message_id,
                    } => {
                        row["source"] = json!(source);
                        row["conversation_id"] = json!(conversation_id);
                        row["message_id"] = json!(message_id);
                        row["cites"] = super::cites_message(source, conversation_id, message_id);
                    }
                }
                if let Some(copy) = &copies[i] {
                    row["machine"] = json!(copy.label);
                    row["machine_id"] = json!(copy.machine);
                    row["user"] = json!(copy.user);
                    row["cites"]["machine_id"] = json!(copy.machine);
                }
                if explain {
                    row["explain"] = json!({"parts": parts});
                }
                row
            })
            .collect();
        let mut out = json!({
            "query": query,
            "scorer": scorer,
            "model": model,
            "items": n,
            "count": rows.len(),
            "rows": rows,
        });
        if let Some(note) = note {
            out["note"] = json!(note);
        }
        if explain {
            out["explain"] = explain_json(scorer, &t, &terms);
        }
        Ok(out)
    }
}

/// The call-wide part of `explain`: how the parts were scored and combined.
fn explain_json(scorer: &str, t: &Tuning, terms: &[String]) -> Value {
    let bm25 = json!({"k1": t.k1, "b": t.b, "collection": "the candidates", "terms": terms});
    match scorer {
        "semantic" => {
            json!({"scorer": "semantic", "score": "cosine of the query with the item's best chunk"})
        }
        "bm25" => json!({"scorer": "bm25", "score": "BM25 over the candidates", "bm25": bm25}),
        _ => {
            let method = match t.rrf_k {
                Some(k) => json!({"method": "rrf", "k": k, "score": "Σ weight / (k + part rank)"}),
                None => json!({
                    "method": "normalised",
                    "score": "Σ weight × part score over the candidates' best (cosines min-max)",
                }),
            };
            json!({
                "scorer": "fusion",
                "fusion": method,
                "weights": {"semantic": t.semantic_weight, "bm25": t.bm25_weight},
                "bm25": bm25,
            })
        }
    }
}

/// `text` cut to `chars` characters plus `…` when longer (a negative `chars`: whole),
/// and whether it was cut.
fn cut(text: &str, chars: i64) -> (String, bool) {
    let Ok(chars) = usize::try_from(chars) else {
        return (text.to_owned(), false);
    };
    match text.char_indices().nth(chars) {
        Some((at, _)) => (format!("{}…", &text[..at]), true),
        None => (text.to_owned(), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_take_exactly_one_form() {
        let ok = parse_item(0, &json!({"text": "a", "id": "x"})).unwrap();
        assert_eq!(
            ok,
            Item::Text {
                text: "a".into(),
                id: Some("x".into())
            }
        );
        assert_eq!(
            parse_item(1, &json!({"memory_id": "m"})).unwrap(),
            Item::Memory { id: "m".into() }
        );
        for bad in [
            json!({}),
            json!({"text": "a", "memory_id": "m"}),
            json!({"memory_id": "m", "source": "s"}),
            json!({"source": "s", "conversation_id": "c"}),
            json!({"memory_id": "m", "id": "x"}),
        ] {
            let e = parse_item(7, &bad).unwrap_err().to_string();
            assert!(e.contains("item 7"), "{bad}: {e}");
        }
    }

    #[test]
    fn bm25_over_the_candidates_stems_and_skips_stop_words() {
        let texts = vec![
            "She paints landscapes".to_owned(),
            "The weather was nice".to_owned(),
            "painting painting and more painting".to_owned(),
        ];
        let (terms, scores) = bm25("What does she paint?", &texts, &Tuning::DEFAULT);
        assert_eq!(terms, vec!["paint"]);
        assert!(scores[0].0 > 0.0 && scores[2].0 > scores[0].0);
        assert!(scores[1].0.abs() < f64::EPSILON);
        assert_eq!(scores[2].1["paint"], json!(3));
    }

    #[test]
    fn ranks_break_ties_by_position() {
        assert_eq!(
            ranks(&[1.0, 2.0, 1.0, 0.0], |s| s > 0.0),
            vec![Some(2), Some(1), Some(3), None]
        );
    }

    #[test]
    fn cut_counts_characters() {
        assert_eq!(cut("héllo", 2), ("hé…".to_owned(), true));
        assert_eq!(cut("héllo", 5), ("héllo".to_owned(), false));
        assert_eq!(cut("héllo", -1), ("héllo".to_owned(), false));
        assert_eq!(cut("héllo", 0), ("…".to_owned(), true));
    }
}
