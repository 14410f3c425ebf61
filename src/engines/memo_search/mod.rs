//! Engine `memo_search`: ranked retrieval over durable memories (SQLite + FTS5 +
//! static embeddings) in five modes.
//!
//! - `bm25`: BM25 over the disjunction of the query's word tokens (as FTS5's
//!   `unicode61 remove_diacritics 2` tokenizer cuts them, each quoted so user text is
//!   never FTS5 syntax, joined with OR): every memory holding any word is ranked;
//!   [`STOP_WORDS`] are left out while another word remains. Column weights title 5,
//!   tags 3, body 1.
//! - `exact`: strict AND of every token (stop words included), weights title 10,
//!   tags 8, body 1.
//! - `fuzzy`: each token also matches indexed terms within optimal-string-alignment
//!   distance 1 (2 from 8 characters; none up to 3 characters, none for stop words),
//!   found in the FTS5 vocabulary; OR of the groups; weights 5/3/1.
//! - `vec`: cosine similarity between the query's embedding and stored unit vectors,
//!   one per chunk of a memory (long memories are embedded in chunks); a memory scores
//!   by its best chunk.
//! - `hybrid` (default and any unrecognised mode): score-normalised fusion of the bm25
//!   and vec legs (each leg's score over its best, weighted bm25 1 and vec 0.3,
//!   summed), each leg taking max(2·limit, 20) candidates. Filters run inside every
//!   leg, before its cut, so they can never starve the result.
//!
//! Filters, tie-breaks and the vec leg read the store's in-memory [`SearchIndex`]
//! (metadata of every row plus the embedding matrix), loaded once per opened store and
//! reloaded when the file changes. The FTS5 legs are scored from the store's in-memory
//! postings ([`FtsIndex`](crate::search::bm25::FtsIndex), read on the first
//! FTS5 leg): the same rows and bit-identical `bm25()` values as SQLite's `MATCH` …
//! `bm25()`, which stays the reference ([`Scorer::Reference`]) and the path taken when
//! the postings are unavailable. The vec leg scans an 8-bit copy of the matrix first
//! and computes exact cosines only for rows that can reach its top n
//! ([`SearchIndex::for_each_top_dot`]). Filters applied to every row are computed once
//! per search from columns laid out for them
//! ([`FilterColumns`](crate::search::filter_columns::FilterColumns)).
//!
//! Memories another memory supersedes (`memory_links`, written by `memo-save`'s
//! `supersedes`) are left out of every mode's ranking unless `include_superseded` is
//! true; then they rank as any other and carry `superseded_by`.
//!
//! Scores (higher is better): bm25/exact/fuzzy give −bm25 (> 0, unbounded); vec gives
//! the cosine clamped to [0, 1]; hybrid gives Σ weight · score / leg's best score, in
//! (0, 1.3].
//! Ties break on newer `updated`, then smaller id, so one input always gives one order.
//!
//! A call that stops (its deadline passes, its client leaves: [`Context::cancel`])
//! stops the search: the signal is checked before and after every leg and inside the
//! legs once per query term and per block of postings, vectors or SQLite rows
//! ([`STOP_CHECK_ROWS`]); the search then fails with [`EngineError::Stopped`].
//!
//! The engine only reads: the store is opened read-only and nothing (not even access
//! counts) is written. `source` is logged to stderr when `SKILLS_LOG` contains `debug`.
//!
//! Kept in one file (1003 lines): the legs and their fusion share the candidate and filter types; the differential test is apart.

#[cfg(test)]
mod differential;
pub mod when;

use std::cell::OnceCell;
use std::cmp::Ordering;
use std::collections::HashMap;

use chrono::{DateTime, NaiveDate, Utc};
use rusqlite::{params_from_iter, Connection};
use serde_json::{json, Map, Value};

use super::{Context, Engine, EngineError};
use crate::cancel::Cancel;
use crate::embed::Embedder;
use crate::search::bm25::Matches;
use crate::search::filter_columns::RowMeta;
use crate::search::fuzzy;
/// The stop words, shared with the conversations index's keyword postings.
pub use crate::search::words::{is_stop_word, STOP_WORDS};
use crate::stores::memories::{format_time, json_list, links_of, MemoryStore, SearchIndex};
use crate::time::parse_when;

/// Default and bounds of `limit`.
pub const DEFAULT_LIMIT: i64 = 10;
/// Largest `limit`; larger values are clamped.
pub const MAX_LIMIT: i64 = 500;
/// Default `body_chars`.
pub const DEFAULT_BODY_CHARS: i64 = 280;
/// Hybrid's weight of the bm25 leg (see `Fusion`).
pub const BM25_WEIGHT: f64 = 1.0;
/// Hybrid's weight of the vec leg (see `Fusion`).
pub const VEC_WEIGHT: f64 = 0.3;
/// Hybrid's bm25 leg scores each memory with its neighbours in its sequence (the
/// memories of one conversation or one imported file, in time order: [`Neighbours`]):
/// its own BM25 plus [`CONTEXT`]`.weight` × theirs, up to `window` on each side
/// (docs/performance.md, "Context-aware keyword leg").
///
/// [`Neighbours`]: crate::stores::memories::Neighbours
pub const CONTEXT: Around = Around {
    window: 2,
    weight: 0.5,
};

/// How the bm25 leg of hybrid counts a memory's neighbours ([`CONTEXT`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Around {
    /// Memories on each side that count.
    pub window: usize,
    /// Weight of each neighbour's BM25 (0: the memory alone).
    pub weight: f64,
}

/// The ranking parameters of hybrid mode in one place, so the quality harness can
/// measure variants ([`tune`]); [`Tuning::DEFAULT`] is what every call uses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tuning {
    /// Weight of the vec leg's normalised score ([`VEC_WEIGHT`]).
    pub vec_weight: f64,
    /// Weight of the bm25 leg's normalised score ([`BM25_WEIGHT`]).
    pub bm25_weight: f64,
    /// The bm25 leg's neighbours ([`CONTEXT`]); `None`: each memory alone.
    pub context: Option<Around>,
    /// How the vec leg's cosines are normalised before weighting ([`VEC_NORM`]).
    pub vec_norm: Norm,
}

pub use super::Norm;

/// The vec leg's normalisation with the static model (docs/performance.md, "Second
/// tier").
pub const VEC_NORM: Norm = Norm::Best;
/// Hybrid's weight of the vec leg when memories hold second-tier vectors.
pub const DEEP_VEC_WEIGHT: f64 = 0.5;
/// The vec leg's normalisation when memories hold second-tier vectors.
pub const DEEP_VEC_NORM: Norm = Norm::MinMax;

impl Tuning {
    /// The shipped parameters.
    pub const DEFAULT: Self = Self {
        vec_weight: VEC_WEIGHT,
        bm25_weight: BM25_WEIGHT,
        context: Some(CONTEXT),
        vec_norm: VEC_NORM,
    };

    /// The parameters when the memories' model is the second tier ([`DEEP_VEC_WEIGHT`],
    /// [`DEEP_VEC_NORM`]): e5's cosines sit close together, so they are spread
    /// min-max before weighting.
    pub const DEEP: Self = Self {
        vec_weight: DEEP_VEC_WEIGHT,
        bm25_weight: BM25_WEIGHT,
        context: Some(CONTEXT),
        vec_norm: DEEP_VEC_NORM,
    };
}

static TUNING: super::Override<Tuning> = super::Override::new();

/// Replaces [`Tuning::DEFAULT`] for every later call in this process (`None` restores
/// it). For the quality harness (`benches/quality.rs`) only.
#[doc(hidden)]
pub fn tune(t: Option<Tuning>) {
    TUNING.set(t);
}

/// The tuning of this call: the harness's override, else [`Tuning::DEEP`] when the
/// memories' model is the second tier, else [`Tuning::DEFAULT`].
fn tuning(deep: bool) -> Tuning {
    TUNING.get_or(if deep { Tuning::DEEP } else { Tuning::DEFAULT })
}
/// Most distinct query words searched (FTS5 expressions stay small).
pub const MAX_TOKENS: usize = 64;
/// Most vocabulary terms one fuzzy token expands to (closest first).
pub const MAX_EXPANSIONS: usize = 32;
/// Rows (postings, SQLite result rows, vectors) a leg goes through between two checks
/// of [`Request::stop`].
pub const STOP_CHECK_ROWS: usize = 4096;

/// Retrieval mode (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Score-normalised fusion of bm25 and vec.
    Hybrid,
    /// Embedding cosine only.
    Vec,
    /// FTS5 BM25 over the disjunction of the query's words.
    Bm25,
    /// FTS5 strict AND with a strong title/tag boost.
    Exact,
    /// Typo-tolerant FTS5.
    Fuzzy,
}

impl Mode {
    /// Parses a mode name (case-insensitive); `None` for anything unrecognised.
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "hybrid" => Some(Self::Hybrid),
            "vec" => Some(Self::Vec),
            "bm25" => Some(Self::Bm25),
            "exact" => Some(Self::Exact),
            "fuzzy" => Some(Self::Fuzzy),
            _ => None,
        }
    }

    /// The mode's name as the schema spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Hybrid => "hybrid",
            Self::Vec => "vec",
            Self::Bm25 => "bm25",
            Self::Exact => "exact",
            Self::Fuzzy => "fuzzy",
        }
    }
}

/// Which implementation scores the legs. Both give the same rows, order and score
/// bits; `Reference` is what `Fast` is tested against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scorer {
    /// FTS5 legs from the store's in-memory postings
    /// ([`FtsIndex`](crate::search::bm25::FtsIndex); SQLite when they are
    /// unavailable); the vec leg through the 8-bit first pass
    /// ([`SearchIndex::for_each_top_dot`]).
    #[default]
    Fast,
    /// FTS5 legs through SQLite (`SELECT rowid, bm25(memories_fts, …) … WHERE
    /// memories_fts MATCH ?`); the vec leg as one exact pass over every vector.
    Reference,
}

/// Checked arguments of one search (the engine's "HiArgs").
#[derive(Debug, Clone)]
pub struct Request {
    /// Trimmed query text.
    pub query: String,
    /// Mode actually used.
    pub mode: Mode,
    /// Restrict to this type (lowercased).
    pub kind: Option<String>,
    /// Inclusive lower bound on `updated`, as stored text.
    pub from: Option<String>,
    /// Inclusive upper bound on `updated`, as stored text.
    pub to: Option<String>,
    /// Lowercased path fragment (file mode).
    pub file: Option<String>,
    /// Hits wanted, 1..=500.
    pub limit: usize,
    /// Body cap in characters; `None` disables truncation.
    pub body_chars: Option<usize>,
    /// Add per-hit `explain` and a `trace`.
    pub explain: bool,
    /// Rank memories another memory supersedes too (default: left out).
    pub include_superseded: bool,
    /// Notes collected while checking arguments.
    pub notes: Vec<String>,
    /// Scorer of the legs (not an argument: [`Scorer::Fast`]).
    pub scorer: Scorer,
    /// The call's stop signal (not an argument: one that never stops; the engine sets
    /// its context's, [`Context::cancel`]). Checked before and after every leg and,
    /// inside the legs, once per query term and per block of [`STOP_CHECK_ROWS`]
    /// rows; a stopped search fails with [`EngineError::Stopped`].
    pub stop: Cancel,
}

impl Request {
    /// Checks `args` (already schema-validated) against the clock `now`.
    ///
    /// # Errors
    /// [`EngineError::Argument`] naming `date_from` or `date_to` when a bound does not
    /// parse as an ISO date or datetime.
    pub fn from_args(args: &Value, now: DateTime<Utc>) -> Result<Self, EngineError> {
        let text = |k: &str| {
            args.get(k)
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
        };
        let mut notes = Vec::new();
        let query = text("query").unwrap_or("").to_owned();
        let mode = match text("mode") {
            None => Mode::Hybrid,
            Some(m) => Mode::parse(m).unwrap_or_else(|| {
                notes.push(format!("unrecognised mode `{m}`: used hybrid"));
                Mode::Hybrid
            }),
        };
        let raw_limit = args
            .get("limit")
            .and_then(Value::as_i64)
            .unwrap_or(DEFAULT_LIMIT);
        let limit = raw_limit.clamp(1, MAX_LIMIT);
        if limit != raw_limit {
            notes.push(format!("limit {raw_limit} clamped to {limit}"));
        }
        let body_chars = args
            .get("body_chars")
            .and_then(Value::as_i64)
            .unwrap_or(DEFAULT_BODY_CHARS);
        let body_chars = usize::try_from(body_chars).ok();
        let mut explain = args
            .get("explain")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let include_superseded = args
            .get("include_superseded")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let file = text("file").map(str::to_ascii_lowercase);
        let kind = text("type").map(str::to_lowercase);
        let (mut from, mut to) = (None, None);
        if file.is_some() {
            let ignored: Vec<&str> = ["date_from", "date_to", "when"]
                .into_iter()
                .filter(|k| text(k).is_some())
                .collect();
            let mut parts: Vec<String> = ignored.iter().map(|k| format!("`{k}`")).collect();
            if explain {
                parts.push("`explain`".into());
                explain = false;
            }
            if !parts.is_empty() {
                notes.push(format!("file mode: {} not applied", parts.join(", ")));
            }
        } else if text("date_from").is_some() || text("date_to").is_some() {
            if let Some(s) = text("date_from") {
                from = Some(format_time(
                    &parse_bound(s, false).ok_or_else(|| bad_date("date_from", s))?,
                ));
            }
            if let Some(s) = text("date_to") {
                to = Some(format_time(
                    &parse_bound(s, true).ok_or_else(|| bad_date("date_to", s))?,
                ));
            }
            if let Some(w) = text("when") {
                notes.push(format!(
                    "`when` \"{w}\" ignored because date_from/date_to is set"
                ));
            }
        } else if let Some(w) = text("when") {
            match when::parse(w, now.date_naive()) {
                Some((a, b)) => {
                    from = Some(day_start(a));
                    to = Some(day_end(b));
                }
                None => notes.push(format!(
                    "`when` \"{w}\" not recognised: no date filter applied"
                )),
            }
        }
        Ok(Self {
            query,
            mode,
            kind,
            from,
            to,
            file,
            limit: usize::try_from(limit).unwrap_or(1),
            body_chars,
            explain,
            include_superseded,
            notes,
            scorer: Scorer::default(),
            stop: Cancel::new(),
        })
    }
}

fn bad_date(name: &str, value: &str) -> EngineError {
    EngineError::Argument {
        name: name.into(),
        reason: format!(
            "`{value}` is not an ISO date or datetime (e.g. 2026-07-01 or 2026-07-01T09:30:00Z)"
        ),
    }
}

/// A bound: a bare date is the start (`upper = false`) or end (`upper = true`) of that
/// UTC day; a datetime without offset is UTC.
fn parse_bound(s: &str, upper: bool) -> Option<DateTime<Utc>> {
    if let Ok(d) = NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        let t = if upper {
            d.and_hms_opt(23, 59, 59)
        } else {
            d.and_hms_opt(0, 0, 0)
        };
        return t.map(|t| t.and_utc());
    }
    parse_when(s)
}

fn day_start(d: NaiveDate) -> String {
    format!("{}T00:00:00Z", d.format("%Y-%m-%d"))
}

fn day_end(d: NaiveDate) -> String {
    format!("{}T23:59:59Z", d.format("%Y-%m-%d"))
}

/// The engine (stateless; the store and model come from the [`Context`]).
pub struct MemoSearch;

impl Engine for MemoSearch {
    fn name(&self) -> &'static str {
        "memo_search"
    }

    /// Reads the memories store.
    fn effects(&self) -> super::Effects {
        super::Effects::reads(&[crate::stores::Store::Memories])
    }

    /// Output shape: `{"hits": [{"id", "title", "type", "tags": [str], "created",
    /// "updated" (UTC `YYYY-MM-DDTHH:MM:SSZ`), "body", "body_truncated"?: true,
    /// "score": number, "files_read": [str], "files_modified": [str], "superseded_by"?:
    /// [id], "supersedes"?: [id], "conversation_id"?: str, "explain"?: {..}}],
    /// "mode": str, "count": int, "note"?: str, "trace"?: [{"stage", ..}]}`.
    fn call(&self, args: &Value, ctx: &Context) -> Result<Value, EngineError> {
        if let Some(source) = args.get("source").and_then(Value::as_str) {
            if std::env::var("SKILLS_LOG").is_ok_and(|v| v.contains("debug")) {
                eprintln!("debug: memo_search called by source `{source}`");
            }
        }
        let mut req = Request::from_args(args, ctx.now())?;
        req.stop = ctx.cancel().clone();
        if req.query.is_empty() {
            return Ok(finish(
                &req,
                Vec::new(),
                vec!["empty query: no hits".into()],
                None,
            ));
        }
        let store = ctx.memories()?;
        let embedder = ctx.memory_embedder();
        search(
            &store,
            embedder.as_deref().map_err(ToString::to_string),
            &req,
        )
    }
}

/// One leg's ranked candidates: `(rowid, score)`, best first.
type Ranked = Vec<(i64, f64)>;

/// What a search decided before reading the hits' rows: fused hits, best first (`None`
/// when the query has no searchable words), notes and trace so far.
struct Ranking {
    fused: Option<Vec<Fused>>,
    /// The tuning the fusion used.
    tuning: Tuning,
    notes: Vec<String>,
    trace: Vec<Value>,
}

/// Runs `req` against `store`. `embedder` is the model, or why there is none.
///
/// # Errors
/// [`EngineError::Unavailable`] in `vec` mode without a model (or without stored
/// embeddings from it); [`EngineError::Store`] on SQLite failures;
/// [`EngineError::Stopped`] once [`Request::stop`] has stopped (checked between the
/// legs; the legs themselves return early).
pub fn search(
    store: &MemoryStore,
    embedder: Result<&Embedder, String>,
    req: &Request,
) -> Result<Value, EngineError> {
    let conn = store.lock();
    let Ranking {
        fused,
        tuning,
        notes,
        mut trace,
    } = rank(store, &conn, embedder, req)?;
    stopped(req)?;
    let Some(fused) = fused else {
        return Ok(finish(req, Vec::new(), notes, req.explain.then_some(trace)));
    };
    let rows = load_rows(&conn, &fused.iter().map(|f| f.rowid).collect::<Vec<_>>())
        .map_err(|e| EngineError::Store(store.error(e)))?;
    let ids: Vec<String> = rows
        .values()
        .filter_map(|r| r.get("id").and_then(Value::as_str).map(str::to_owned))
        .collect();
    let links = links_of(&conn, &ids).map_err(|e| EngineError::Store(store.error(e)))?;
    drop(conn);
    let mut hits = Vec::with_capacity(fused.len());
    for f in &fused {
        let Some(row) = rows.get(&f.rowid) else {
            continue;
        };
        let mut hit = row.clone();
        if let Some(l) = hit
            .get("id")
            .and_then(Value::as_str)
            .and_then(|id| links.get(id))
        {
            if !l.superseded_by.is_empty() {
                hit.insert("superseded_by".into(), json!(l.superseded_by));
            }
            if !l.supersedes.is_empty() {
                hit.insert("supersedes".into(), json!(l.supersedes));
            }
            if let Some(conv) = &l.conversation_id {
                hit.insert("conversation_id".into(), json!(conv));
            }
        }
        if let Some(max) = req.body_chars {
            truncate_body(&mut hit, max);
        }
        hit.insert("score".into(), json!(round6(f.score)));
        if req.explain {
            let mut legs_json = Map::new();
            for (name, rank, score) in &f.legs {
                let mut leg = json!({"rank": rank, "score": round6(*score)});
                if req.mode == Mode::Hybrid {
                    leg["weight"] = json!(Fusion(&tuning).weight(name));
                    if let Some(n) = f.normalised.iter().find(|n| n.0 == *name) {
                        leg["normalised"] = json!(round6(n.1));
                    }
                }
                legs_json.insert((*name).into(), leg);
            }
            let mut explain = json!({"legs": legs_json});
            if req.mode == Mode::Hybrid {
                explain["fusion"] = json!({"method": "normalised", "score": round6(f.score)});
            }
            hit.insert("explain".into(), explain);
        }
        hits.push(Value::Object(hit));
    }
    trace.push(json!({"stage": "output", "hits": hits.len(), "body_chars": req.body_chars}));
    Ok(finish(req, hits, notes, req.explain.then_some(trace)))
}

/// Parses the query, runs the mode's legs through `conn` (`store`'s connection,
/// locked) and fuses them.
fn rank(
    store: &MemoryStore,
    conn: &Connection,
    embedder: Result<&Embedder, String>,
    req: &Request,
) -> Result<Ranking, EngineError> {
    let mut notes = req.notes.clone();
    let mut trace: Vec<Value> = Vec::new();
    let tuning = tuning(embedder.as_ref().is_ok_and(|e| e.is_deep()));
    let mut tokens = fold_tokens(&req.query).map_err(|e| store.error(e))?;
    if tokens.len() > MAX_TOKENS {
        notes.push(format!(
            "query has {} distinct words: only {MAX_TOKENS} were searched",
            tokens.len()
        ));
        tokens.truncate(MAX_TOKENS);
    }
    trace.push(json!({
        "stage": "parse", "mode": req.mode.as_str(), "tokens": tokens, "limit": req.limit,
        "filters": {"type": req.kind, "from": req.from, "to": req.to, "file": req.file},
    }));
    if tokens.is_empty() {
        notes.push("query has no searchable words: no hits".into());
        return Ok(Ranking {
            fused: None,
            tuning,
            notes,
            trace,
        });
    }
    let map_err = |e: rusqlite::Error| EngineError::Store(store.error(e));
    let model = embedder.as_ref().ok().map(|e| (e.name(), e.dim()));
    stopped(req)?;
    let index = store.search_index(conn, model).map_err(map_err)?;
    stopped(req)?;
    let leg = Leg {
        conn,
        index: index.as_ref(),
        filter: Filter::new(req),
        scorer: req.scorer,
    };
    let mut legs: Vec<(&'static str, Ranked)> = Vec::new();
    match req.mode {
        Mode::Bm25 => legs.push((
            "bm25",
            leg.bm25(&tokens, req.limit, &mut trace).map_err(map_err)?,
        )),
        Mode::Exact => legs.push((
            "exact",
            leg.exact(&tokens, req.limit, &mut trace).map_err(map_err)?,
        )),
        Mode::Fuzzy => legs.push((
            "fuzzy",
            leg.fuzzy(&tokens, req.limit, &mut trace).map_err(map_err)?,
        )),
        Mode::Vec => {
            let embedder = embedder
                .map_err(|why| EngineError::Unavailable(format!("embedding unavailable: {why}")))?;
            let mask = leg.filter.mask(leg.index);
            stopped(req)?;
            let ranked = vec_leg_until(
                leg.index, embedder, &req.query, mask, req.limit, req.scorer, &mut trace, &req.stop,
            );
            if ranked.is_none() {
                return Err(EngineError::Unavailable(format!(
                    "embedding unavailable: no memory has an embedding from model `{}`; re-run the memory import",
                    embedder.name()
                )));
            }
            legs.push(("vec", ranked.unwrap_or_default()));
        }
        Mode::Hybrid => {
            let n = (2 * req.limit).max(20);
            let mask = leg.filter.mask(leg.index);
            stopped(req)?;
            match embedder {
                Ok(embedder) => match vec_leg_until(
                    leg.index, embedder, &req.query, mask, n, req.scorer, &mut trace, &req.stop,
                ) {
                    Some(ranked) => legs.push(("vec", ranked)),
                    None => notes.push(format!(
                        "no stored embeddings from model `{}`: hybrid used its bm25 leg only",
                        embedder.name()
                    )),
                },
                Err(why) => notes.push(format!(
                    "embedding unavailable ({why}): hybrid used its bm25 leg only"
                )),
            }
            stopped(req)?;
            let bm25 = match tuning.context {
                Some(around) => leg.bm25_in_context(&tokens, n, around, &mut trace),
                None => leg.bm25(&tokens, n, &mut trace),
            };
            legs.push(("bm25", bm25.map_err(map_err)?));
        }
    }
    stopped(req)?;
    let fused = fuse(req.mode, &legs, req.limit, &tuning, &mut trace);
    Ok(Ranking {
        fused: Some(fused),
        tuning,
        notes,
        trace,
    })
}

/// `Err` with [`EngineError::Stopped`] once `req`'s call has stopped.
fn stopped(req: &Request) -> Result<(), EngineError> {
    req.stop.check().map_err(EngineError::Stopped)
}

fn finish(req: &Request, hits: Vec<Value>, notes: Vec<String>, trace: Option<Vec<Value>>) -> Value {
    let mut out = json!({"hits": hits, "mode": req.mode.as_str(), "count": hits.len()});
    if !notes.is_empty() {
        out["note"] = json!(notes.join("; "));
    }
    if let Some(trace) = trace {
        out["trace"] = json!(trace);
    }
    out
}

fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

fn truncate_body(hit: &mut Map<String, Value>, max: usize) {
    let Some(body) = hit.get("body").and_then(Value::as_str) else {
        return;
    };
    if body.chars().count() > max {
        let cut: String = body.chars().take(max).collect();
        hit.insert("body".into(), json!(format!("{cut}…")));
        hit.insert("body_truncated".into(), json!(true));
    }
}

/// The request's filters, applied to each row's in-memory metadata exactly as the SQL
/// they replace did: `type =`, `updated` between the bounds (text order), and `file` as
/// a substring of an ASCII-lowercased read or modified path.
struct Filter {
    kind: Option<String>,
    from: Option<String>,
    to: Option<String>,
    file: Option<memchr::memmem::Finder<'static>>,
    /// Leave out rows another memory supersedes.
    hide_superseded: bool,
    /// [`Filter::keep`] of every row, computed on the first [`Filter::mask`] call.
    mask: OnceCell<Vec<bool>>,
    /// The search's [`Request::stop`]: the legs check it (it never changes what
    /// [`Filter::keep`] or [`Filter::mask`] say).
    stop: Cancel,
}

impl Filter {
    fn new(req: &Request) -> Self {
        Self {
            kind: req.kind.clone(),
            from: req.from.clone(),
            to: req.to.clone(),
            file: req
                .file
                .as_ref()
                .map(|f| memchr::memmem::Finder::new(f.as_bytes()).into_owned()),
            hide_superseded: !req.include_superseded,
            mask: OnceCell::new(),
            stop: req.stop.clone(),
        }
    }

    fn is_empty(&self) -> bool {
        self.kind.is_none() && self.from.is_none() && self.to.is_none() && self.file.is_none()
    }

    fn keep(&self, m: &RowMeta) -> bool {
        self.kind.as_ref().is_none_or(|k| m.kind == *k)
            && self.from.as_ref().is_none_or(|f| m.updated >= *f)
            && self.to.as_ref().is_none_or(|t| m.updated <= *t)
            && self
                .file
                .as_ref()
                .is_none_or(|f| m.files.iter().any(|p| f.find(p.as_bytes()).is_some()))
    }

    /// True when row `i` of `index` is left out because another memory supersedes it
    /// (unless `include_superseded`).
    fn hidden(&self, index: &SearchIndex, i: usize) -> bool {
        self.hide_superseded && index.is_superseded(i)
    }

    /// Whether each row of `index` passes, for callers that test most rows (computed
    /// once per search from the index's filter columns); `None` when there is no
    /// filter. Equal, row for row, to [`Filter::keep`] and not [`Filter::hidden`].
    fn mask(&self, index: &SearchIndex) -> Option<&[bool]> {
        let hide = self.hide_superseded && index.superseded_rows() > 0;
        if self.is_empty() && !hide {
            return None;
        }
        Some(self.mask.get_or_init(|| {
            let mut mask = if self.is_empty() {
                vec![true; index.rows().len()]
            } else {
                self.compute_mask(index)
            };
            if hide {
                for (i, keep) in mask.iter_mut().enumerate() {
                    if index.is_superseded(i) {
                        *keep = false;
                    }
                }
            }
            mask
        }))
    }

    fn compute_mask(&self, index: &SearchIndex) -> Vec<bool> {
        let columns = index.filter_columns();
        let n = index.rows().len();
        // Each filter marks the rows it keeps; a row passes when every filter set
        // marked it.
        let mut votes = vec![0u8; n];
        let mut filters = 0u8;
        if let Some(kind) = &self.kind {
            filters += 1;
            columns.rows_of_kind(kind, |row| votes[row] += 1);
        }
        if self.from.is_some() || self.to.is_some() {
            filters += 1;
            let range =
                columns.rows_updated_within(index.rows(), self.from.as_deref(), self.to.as_deref());
            for &row in range {
                votes[row as usize] += 1;
            }
        }
        if let Some(file) = &self.file {
            filters += 1;
            let mut has = vec![false; n];
            let meta = index.rows();
            if !columns.rows_with_path_containing(file.needle(), |row| has[row] = true) {
                for (h, m) in has.iter_mut().zip(meta) {
                    *h = m.files.iter().any(|p| file.find(p.as_bytes()).is_some());
                }
            }
            for (v, h) in votes.iter_mut().zip(has) {
                *v += u8::from(h);
            }
        }
        votes.into_iter().map(|v| v == filters).collect()
    }
}

/// The `n` smallest items of a stream under `cmp`, a total order. Holds at most `2n`:
/// when full it is cut back to the `n` smallest, and from then on an item not below
/// the n-th smallest kept is dropped at once (one comparison, usually decided by the
/// score alone), so a stream of 100k hits costs little more than reading it.
struct TopN<T, F> {
    n: usize,
    kept: Vec<T>,
    cmp: F,
    /// Index in `kept` of the n-th smallest after the last cut.
    cut: Option<usize>,
}

impl<T, F: Fn(&T, &T) -> Ordering> TopN<T, F> {
    fn new(n: usize, cmp: F) -> Self {
        Self {
            n,
            kept: Vec::new(),
            cmp,
            cut: None,
        }
    }

    fn push(&mut self, item: T) {
        if self.n == 0 {
            return;
        }
        if let Some(c) = self.cut {
            if (self.cmp)(&item, &self.kept[c]) != Ordering::Less {
                return;
            }
        }
        self.kept.push(item);
        if self.kept.len() >= self.n.saturating_mul(2) {
            self.kept.select_nth_unstable_by(self.n - 1, &self.cmp);
            self.kept.truncate(self.n);
            // After the cut, slot n − 1 holds the n-th smallest.
            self.cut = Some(self.n - 1);
        }
    }

    /// The `n` smallest, sorted.
    fn into_sorted(mut self) -> Vec<T> {
        if self.kept.len() > self.n && self.n > 0 {
            self.kept.select_nth_unstable_by(self.n - 1, &self.cmp);
        }
        self.kept.truncate(self.n);
        self.kept.sort_by(&self.cmp);
        self.kept
    }
}

/// The query's tokens exactly as the store's FTS5 tokenizer (`unicode61
/// remove_diacritics 2`) cuts and folds them: sorted, unique. Uses a private
/// in-memory database, never the store.
fn fold_tokens(text: &str) -> Result<Vec<String>, rusqlite::Error> {
    let conn = Connection::open_in_memory()?;
    conn.execute_batch(
        "CREATE VIRTUAL TABLE q USING fts5(x, tokenize = 'unicode61 remove_diacritics 2');
         CREATE VIRTUAL TABLE qv USING fts5vocab(q, 'row');",
    )?;
    conn.execute("INSERT INTO q(x) VALUES (?1)", [text])?;
    let mut stmt = conn.prepare("SELECT term FROM qv ORDER BY term")?;
    let terms = stmt
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(terms)
}

/// `tokens` without [`STOP_WORDS`]; all of them when every one is a stop word (so a
/// query such as "The Who" is still searched).
fn content_tokens(tokens: &[String]) -> Vec<String> {
    let kept: Vec<String> = tokens
        .iter()
        .filter(|t| !is_stop_word(t))
        .cloned()
        .collect();
    if kept.is_empty() {
        tokens.to_vec()
    } else {
        kept
    }
}

fn quote(term: &str) -> String {
    format!("\"{}\"", term.replace('"', "\"\""))
}

/// An FTS5 query in the engine's one shape: groups of folded terms, each quoted (a
/// one-term phrase), OR inside a group, the groups joined by AND — or by OR for the
/// fallback. One value gives both the `MATCH` text SQLite runs and the groups
/// in-memory index scores, so both scorers see the same phrases in the same order.
struct TermQuery {
    groups: Vec<Vec<String>>,
    /// Write each group in parentheses (fuzzy groups: `("a" OR "b")`).
    parenthesized: bool,
}

impl TermQuery {
    /// One group per token: `"a" AND "b"`.
    fn tokens(tokens: &[String]) -> Self {
        Self {
            groups: tokens.iter().map(|t| vec![t.clone()]).collect(),
            parenthesized: false,
        }
    }

    /// The `MATCH` text: groups joined by `AND` when `every`, else by `OR`.
    fn expr(&self, every: bool) -> String {
        let groups: Vec<String> = self
            .groups
            .iter()
            .map(|g| {
                let terms = g.iter().map(|t| quote(t)).collect::<Vec<_>>().join(" OR ");
                if self.parenthesized {
                    format!("({terms})")
                } else {
                    terms
                }
            })
            .collect();
        groups.join(if every { " AND " } else { " OR " })
    }
}

/// What the FTS5 legs of one search share: the locked connection, the store's index,
/// the filters and the scorer.
struct Leg<'a> {
    conn: &'a Connection,
    index: &'a SearchIndex,
    filter: Filter,
    scorer: Scorer,
}

impl Leg<'_> {
    fn bm25(
        &self,
        tokens: &[String],
        n: usize,
        trace: &mut Vec<Value>,
    ) -> Result<Ranked, rusqlite::Error> {
        let query = TermQuery::tokens(&content_tokens(tokens));
        self.any_term("bm25", &query, [5, 3, 1], n, trace)
    }

    /// The bm25 leg with each memory scored together with its neighbours ([`CONTEXT`]):
    /// every row any content word matches is scored (−bm25, > 0), then each row
    /// holding a word or next to one that does scores its own plus `around.weight` ×
    /// its neighbours' (they count whether the filters keep them or not); the `n` best
    /// rows the filters keep, as `(rowid, score)`. Ties as [`Leg::top`].
    fn bm25_in_context(
        &self,
        tokens: &[String],
        n: usize,
        around: Around,
        trace: &mut Vec<Value>,
    ) -> Result<Ranked, rusqlite::Error> {
        let query = TermQuery::tokens(&content_tokens(tokens));
        let weights = [5, 3, 1];
        let matches = self.in_memory(&query, weights)?;
        let or = query.expr(false);
        let scored = self.every_score(&or, matches.as_ref(), weights)?;
        let meta = self.index.rows();
        let mut own = vec![0f64; meta.len()];
        for &(i, s) in &scored {
            own[i] = s;
        }
        let neighbours = self.index.neighbours();
        let mask = self.filter.mask(self.index);
        let mut seen = vec![false; meta.len()];
        let mut near: Vec<usize> = Vec::new();
        let mut hits = TopN::new(n, |a: &(f64, usize), b: &(f64, usize)| {
            a.0.partial_cmp(&b.0)
                .unwrap_or(Ordering::Equal)
                .then_with(|| meta[b.1].updated.cmp(&meta[a.1].updated))
                .then_with(|| meta[a.1].id.cmp(&meta[b.1].id))
        });
        let mut candidates = 0usize;
        for &(t, _) in &scored {
            near.clear();
            near.push(t);
            neighbours.around(t, around.window, &mut near);
            for c in near.clone() {
                if std::mem::replace(&mut seen[c], true) || !mask.is_none_or(|m| m[c]) {
                    continue;
                }
                candidates += 1;
                let mut ctx = Vec::new();
                neighbours.around(c, around.window, &mut ctx);
                let score = own[c] + around.weight * ctx.iter().map(|&j| own[j]).sum::<f64>();
                if score > 0.0 {
                    hits.push((-score, c));
                }
            }
        }
        let ranked: Ranked = hits
            .into_sorted()
            .into_iter()
            .map(|(s, i)| (meta[i].rowid, -s))
            .collect();
        trace.push(json!({
            "stage": "leg", "leg": "bm25", "fts_query": or, "candidates": ranked.len(),
            "context": {"window": around.window, "weight": around.weight, "matched": scored.len(), "scored": candidates},
        }));
        Ok(ranked)
    }

    fn exact(
        &self,
        tokens: &[String],
        n: usize,
        trace: &mut Vec<Value>,
    ) -> Result<Ranked, rusqlite::Error> {
        let query = TermQuery::tokens(tokens);
        self.all_terms("exact", &query, [10, 8, 1], n, trace)
    }

    fn fuzzy(
        &self,
        tokens: &[String],
        n: usize,
        trace: &mut Vec<Value>,
    ) -> Result<Ranked, rusqlite::Error> {
        let vocab = self.index.vocab(self.conn)?;
        let mut groups = Vec::new();
        let mut expansions = Map::new();
        for token in &content_tokens(tokens) {
            if self.filter.stop.is_stopped() {
                break;
            }
            let max = if is_stop_word(token) {
                0
            } else {
                fuzzy::max_distance(token)
            };
            let mut near = fuzzy::near(vocab, token, max);
            near.sort_unstable();
            near.truncate(MAX_EXPANSIONS);
            let mut terms: Vec<String> = near.iter().map(|(_, t)| (*t).to_owned()).collect();
            if terms.is_empty() {
                terms.push(token.clone());
            }
            expansions.insert(token.clone(), json!(terms));
            groups.push(terms);
        }
        if self.filter.stop.is_stopped() {
            return Ok(Vec::new());
        }
        trace.push(json!({"stage": "expand", "leg": "fuzzy", "vocabulary": vocab.len(), "expansions": expansions}));
        let query = TermQuery {
            groups,
            parenthesized: true,
        };
        self.any_term("fuzzy", &query, [5, 3, 1], n, trace)
    }

    /// BM25 over the disjunction of `query`'s groups: every row matching any term,
    /// ranked by `bm25()` alone (rows matching more terms score higher through the
    /// sum; nothing is filtered on AND-ness).
    fn any_term(
        &self,
        leg: &str,
        query: &TermQuery,
        weights: [u32; 3],
        n: usize,
        trace: &mut Vec<Value>,
    ) -> Result<Ranked, rusqlite::Error> {
        let matches = self.in_memory(query, weights)?;
        let or = query.expr(false);
        let ranked = self.top(&or, false, matches.as_ref(), weights, n)?;
        trace
            .push(json!({"stage": "leg", "leg": leg, "fts_query": or, "candidates": ranked.len()}));
        Ok(ranked)
    }

    /// The strict AND of `query`'s groups (no fallback).
    fn all_terms(
        &self,
        leg: &str,
        query: &TermQuery,
        weights: [u32; 3],
        n: usize,
        trace: &mut Vec<Value>,
    ) -> Result<Ranked, rusqlite::Error> {
        let matches = self.in_memory(query, weights)?;
        let and = query.expr(true);
        let ranked = self.top(&and, true, matches.as_ref(), weights, n)?;
        trace.push(
            json!({"stage": "leg", "leg": leg, "fts_query": and, "candidates": ranked.len()}),
        );
        Ok(ranked)
    }

    /// `query` scored from the in-memory postings (FTS5's `bm25()` bit for bit), or
    /// `None` when SQLite must answer: the reference scorer asked for, or postings
    /// unavailable.
    fn in_memory(
        &self,
        query: &TermQuery,
        weights: [u32; 3],
    ) -> Result<Option<Matches<'_>>, rusqlite::Error> {
        Ok(match self.scorer {
            Scorer::Fast => self
                .index
                .fts(self.conn)?
                .map(|fts| fts.query(&query.groups, weights)),
            Scorer::Reference => None,
        })
    }

    /// Every row that `expr` (the OR form of the query) matches, filters not applied:
    /// `(row, −bm25)`. From `matches` when the in-memory scorer produced them, else
    /// from SQLite.
    fn every_score(
        &self,
        expr: &str,
        matches: Option<&Matches>,
        weights: [u32; 3],
    ) -> Result<Vec<(usize, f64)>, rusqlite::Error> {
        let mut out = Vec::new();
        match matches {
            Some(matches) => matches.any_group(&self.filter.stop, |i, bm25| out.push((i, -bm25))),
            None => self.sqlite_scores(expr, weights, |i, bm25| out.push((i, -bm25)))?,
        }
        Ok(out)
    }

    /// `f(row, bm25)` for every stored row that `expr` matches, as SQLite's
    /// `bm25(memories_fts, weights…)` scores it (negative, lower is better), until the
    /// search stops.
    fn sqlite_scores(
        &self,
        expr: &str,
        weights: [u32; 3],
        mut f: impl FnMut(usize, f64),
    ) -> Result<(), rusqlite::Error> {
        let [w0, w1, w2] = weights;
        let sql = format!(
            "SELECT rowid, bm25(memories_fts, {w0}, {w1}, {w2}) FROM memories_fts WHERE memories_fts MATCH ?1"
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        // A stop interrupts the statement (its next step fails) and ends the loop.
        let handle = self.conn.get_interrupt_handle();
        let _interrupt = self.filter.stop.on_stop(move || handle.interrupt());
        let mut rows = stmt.query([expr])?;
        let mut seen = 0usize;
        loop {
            // Also before the first row: an interrupt sent before the statement
            // started is forgotten when it starts.
            if seen.is_multiple_of(STOP_CHECK_ROWS) && self.filter.stop.is_stopped() {
                break;
            }
            seen += 1;
            let r = match rows.next() {
                Ok(Some(r)) => r,
                Ok(None) => break,
                Err(_) if self.filter.stop.is_stopped() => break,
                Err(e) => return Err(e),
            };
            if let Some(i) = self.index.position(r.get(0)?) {
                f(i, r.get(1)?);
            }
        }
        Ok(())
    }

    /// The `n` best rows that `expr` matches (`every`: the AND form of the query) and
    /// the filters keep, ordered by `bm25(memories_fts, weights…)` ascending, newer
    /// `updated`, smaller id; as `(rowid, −bm25)`. From `matches` when the in-memory
    /// scorer produced them, else from SQLite.
    fn top(
        &self,
        expr: &str,
        every: bool,
        matches: Option<&Matches>,
        weights: [u32; 3],
        n: usize,
    ) -> Result<Ranked, rusqlite::Error> {
        let meta = self.index.rows();
        // ORDER BY bm25 ASC, updated DESC, id ASC (SQLite compares REALs numerically).
        let mut hits = TopN::new(n, |a: &(f64, usize), b: &(f64, usize)| {
            a.0.partial_cmp(&b.0)
                .unwrap_or(Ordering::Equal)
                .then_with(|| meta[b.1].updated.cmp(&meta[a.1].updated))
                .then_with(|| meta[a.1].id.cmp(&meta[b.1].id))
        });
        if let Some(matches) = matches {
            if every {
                // Few rows, as a rule: test them one by one.
                matches.every_group(&self.filter.stop, |i, bm25| {
                    if self.filter.keep(&meta[i]) && !self.filter.hidden(self.index, i) {
                        hits.push((bm25, i));
                    }
                });
            } else {
                let mask = self.filter.mask(self.index);
                matches.any_group(&self.filter.stop, |i, bm25| {
                    if mask.is_none_or(|m| m[i]) {
                        hits.push((bm25, i));
                    }
                });
            }
        } else {
            self.sqlite_scores(expr, weights, |i, bm25| {
                if self.filter.keep(&meta[i]) && !self.filter.hidden(self.index, i) {
                    hits.push((bm25, i));
                }
            })?;
        }
        Ok(hits
            .into_sorted()
            .into_iter()
            .map(|(s, i)| (meta[i].rowid, -s))
            .collect())
    }
}

/// Cosine ranking over stored embeddings from `embedder`'s model; `None` when the
/// store holds none from it at all (filters aside). Once `stop` has stopped, no
/// further vector passes and fewer candidates come back.
#[allow(clippy::too_many_arguments)]
fn vec_leg_until(
    index: &SearchIndex,
    embedder: &Embedder,
    query: &str,
    mask: Option<&[bool]>,
    n: usize,
    scorer: Scorer,
    trace: &mut Vec<Value>,
    stop: &Cancel,
) -> Option<Ranked> {
    let model = embedder.name().to_owned();
    let any = index.embedded();
    if any == 0 {
        trace.push(
            json!({"stage": "leg", "leg": "vec", "model": model, "embedded": 0, "candidates": 0}),
        );
        return None;
    }
    // No timings in the trace: the skill is a pure function, `explain` included.
    let q = embedder.embed_query(query);
    let meta = index.rows();
    // Cosine descending, newer `updated`, smaller id.
    let mut scored = TopN::new(n, |a: &(f64, usize), b: &(f64, usize)| {
        b.0.total_cmp(&a.0)
            .then_with(|| meta[b.1].updated.cmp(&meta[a.1].updated))
            .then_with(|| meta[a.1].id.cmp(&meta[b.1].id))
    });
    let keep = |i: usize| !stop.is_stopped() && mask.is_none_or(|m| m[i]);
    // A memory scores by its best chunk; the pruned pass gives the best chunk of each
    // of the `n` best memories, and any memory it leaves out ranks below them.
    let mut best: HashMap<usize, f32> = HashMap::new();
    let mut chunk = |i: usize, dot: f32| {
        best.entry(i)
            .and_modify(|b| {
                if dot.total_cmp(b) == Ordering::Greater {
                    *b = dot;
                }
            })
            .or_insert(dot);
    };
    let scanned = match scorer {
        // Only chunks that can reach the top are scored (exactly); `scanned` still
        // counts every chunk vector of the rows the filters keep.
        Scorer::Fast => index.for_each_top_dot(&q, n, keep, &mut chunk),
        Scorer::Reference => {
            let mut scanned = 0;
            index.for_each_dot(&q, keep, |i, dot| {
                scanned += 1;
                chunk(i, dot);
            });
            scanned
        }
    };
    for (i, dot) in best {
        scored.push((f64::from(dot).clamp(0.0, 1.0), i));
    }
    let scored = scored.into_sorted();
    trace.push(json!({
        "stage": "leg", "leg": "vec", "model": model, "embedded": any, "scanned": scanned,
        "candidates": scored.len(),
    }));
    Some(
        scored
            .into_iter()
            .map(|(s, i)| (meta[i].rowid, s))
            .collect(),
    )
}

/// Hybrid's fusion under one [`Tuning`]: each leg's scores put on [0, 1] (bm25: over
/// its best; vec: by `vec_norm`), weighted, summed per memory. Weights chosen on the
/// LoCoMo dev half (`cargo bench --bench quality`, docs/performance.md "Retrieval
/// quality", "Second tier"); `exact` is not a hybrid leg (it is almost always empty
/// on natural-language questions, and when not it counts bm25's all-word matches twice).
#[derive(Debug, Clone, Copy)]
struct Fusion<'a>(&'a Tuning);

impl Fusion<'_> {
    fn weight(&self, leg: &str) -> f64 {
        match leg {
            "vec" => self.0.vec_weight,
            "bm25" => self.0.bm25_weight,
            _ => 0.0,
        }
    }

    fn norm(&self, leg: &str) -> Norm {
        if leg == "vec" {
            self.0.vec_norm
        } else {
            Norm::Best
        }
    }
}

/// One fused hit: rowid, final score and its `(leg, rank, leg score)` provenance.
struct Fused {
    rowid: i64,
    score: f64,
    legs: Vec<(&'static str, usize, f64)>,
    /// Hybrid: each leg's score over that leg's best.
    normalised: Vec<(&'static str, f64)>,
}

fn fuse(
    mode: Mode,
    legs: &[(&'static str, Ranked)],
    limit: usize,
    tuning: &Tuning,
    trace: &mut Vec<Value>,
) -> Vec<Fused> {
    let fusion = Fusion(tuning);
    let mut by_row: HashMap<i64, Fused> = HashMap::new();
    let mut order: Vec<i64> = Vec::new();
    for (name, ranked) in legs {
        for (i, (rowid, score)) in ranked.iter().enumerate() {
            let entry = by_row.entry(*rowid).or_insert_with(|| {
                order.push(*rowid);
                Fused {
                    rowid: *rowid,
                    score: 0.0,
                    legs: Vec::new(),
                    normalised: Vec::new(),
                }
            });
            entry.legs.push((name, i + 1, *score));
            let norm = fusion.norm(name);
            if mode == Mode::Hybrid {
                entry
                    .normalised
                    .push((name, normalised(ranked, *score, norm)));
            }
            entry.score += if mode == Mode::Hybrid {
                fusion.weight(name) * normalised(ranked, *score, norm)
            } else {
                *score
            };
        }
    }
    let candidates = order.len();
    let mut fused: Vec<Fused> = order
        .into_iter()
        .filter_map(|r| by_row.remove(&r))
        .collect();
    if mode == Mode::Hybrid {
        // Ties: best single-leg rank, then first-seen order (legs are already ordered
        // by score, newer `updated`, smaller id).
        let first_seen: HashMap<i64, usize> = fused
            .iter()
            .enumerate()
            .map(|(i, f)| (f.rowid, i))
            .collect();
        fused.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| best_rank(a).cmp(&best_rank(b)))
                .then_with(|| first_seen.get(&a.rowid).cmp(&first_seen.get(&b.rowid)))
        });
        trace.push(json!({"stage": "fuse", "method": "normalised", "weights": {"vec": fusion.weight("vec"), "bm25": fusion.weight("bm25")}, "candidates": candidates}));
    }
    fused.truncate(limit);
    fused
}

/// `score` of leg `ranked` (best first) on [0, 1] by `norm` ([`Norm::apply`]).
fn normalised(ranked: &Ranked, score: f64, norm: Norm) -> f64 {
    let top = ranked.first().map_or(0.0, |f| f.1);
    let low = ranked.last().map_or(0.0, |f| f.1);
    norm.apply(score, top, low)
}

fn best_rank(f: &Fused) -> usize {
    f.legs.iter().map(|l| l.1).min().unwrap_or(usize::MAX)
}

fn load_rows(
    conn: &Connection,
    rowids: &[i64],
) -> Result<HashMap<i64, Map<String, Value>>, rusqlite::Error> {
    let mut out = HashMap::new();
    if rowids.is_empty() {
        return Ok(out);
    }
    let marks = vec!["?"; rowids.len()].join(",");
    let sql = format!(
        "SELECT rowid, id, title, type, tags, created, updated, body, files_read, files_modified \
         FROM memories WHERE rowid IN ({marks})"
    );
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt.query_map(params_from_iter(rowids.iter()), |r| {
        let mut m = Map::new();
        m.insert("id".into(), json!(r.get::<_, String>(1)?));
        m.insert("title".into(), json!(r.get::<_, String>(2)?));
        m.insert("type".into(), json!(r.get::<_, String>(3)?));
        m.insert("tags".into(), json!(json_list(&r.get::<_, String>(4)?)));
        m.insert("created".into(), json!(r.get::<_, String>(5)?));
        m.insert("updated".into(), json!(r.get::<_, String>(6)?));
        m.insert("body".into(), json!(r.get::<_, String>(7)?));
        m.insert(
            "files_read".into(),
            json!(json_list(&r.get::<_, String>(8)?)),
        );
        m.insert(
            "files_modified".into(),
            json!(json_list(&r.get::<_, String>(9)?)),
        );
        Ok((r.get::<_, i64>(0)?, m))
    })?;
    for row in rows {
        let (rowid, m) = row?;
        out.insert(rowid, m);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::gen::{self, Spec};

    /// The checks inside the legs, not only between them: with the call stopped,
    /// every FTS5 leg of both scorers returns no candidate although rows match.
    #[test]
    fn stopped_legs_return_early_without_candidates() {
        let store = MemoryStore::open_in_memory().unwrap();
        for m in gen::memories(Spec {
            messages: 500,
            seed: 3,
        }) {
            store.upsert(&m).unwrap();
        }
        let conn = store.lock();
        let index = store.search_index(&conn, None).unwrap();
        let tokens = fold_tokens("serde tokio").unwrap();
        for scorer in [Scorer::Fast, Scorer::Reference] {
            for stopped in [false, true] {
                let mut req =
                    Request::from_args(&json!({"query": "serde tokio"}), Utc::now()).unwrap();
                req.scorer = scorer;
                if stopped {
                    req.stop.cancel();
                }
                let leg = Leg {
                    conn: &conn,
                    index: index.as_ref(),
                    filter: Filter::new(&req),
                    scorer,
                };
                let mut trace = Vec::new();
                let legs = [
                    ("bm25", leg.bm25(&tokens, 10, &mut trace).unwrap()),
                    ("exact", leg.exact(&tokens[..1], 10, &mut trace).unwrap()),
                    ("fuzzy", leg.fuzzy(&tokens, 10, &mut trace).unwrap()),
                ];
                for (name, ranked) in legs {
                    assert_eq!(
                        ranked.is_empty(),
                        stopped,
                        "{name} {scorer:?} stopped={stopped}: {} candidates",
                        ranked.len()
                    );
                }
            }
        }
    }
}
