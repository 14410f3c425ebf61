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
//!   summed) over each leg's first [`CANDIDATES`] (fixed, so the first hits do not
//!   depend on `limit`); a call asking for more hits than they hold continues with the
//!   bm25 leg's further hits in its order, then the vec leg's ([`fuse::beyond`]).
//!   Filters run inside every leg, before its cut, so they can never starve the result.
//!
//! In every mode the first k hits of a call with `limit` n > k are the hits of the
//! call with `limit` k: a single leg is an exact ranking with fixed tie-breaks, cut at
//! `limit`, and hybrid's fusion never sees more than its fixed candidates.
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
//! One concern per file: this one holds the parameters, the engine and the call path
//! (`search` → `rank` → legs → fusion → hits); `request` checks the arguments,
//! `filter` the filters, `fts` and `vec_leg` the legs, `top_n` their bounded cut,
//! `fuse` the fusion, `hits` the output; `differential` tests the two scorers.

mod archive;
#[cfg(test)]
mod differential;
mod filter;
mod fts;
mod fuse;
mod hits;
mod request;
mod top_n;
mod vec_leg;
pub mod when;

use rusqlite::Connection;
use serde_json::{json, Value};

use super::{temporal, Context, Engine, EngineError};
use crate::embed::Embedder;
/// The stop words, shared with the conversations index's keyword postings.
pub use crate::search::words::{is_stop_word, STOP_WORDS};
use crate::stores::memories::fts::Table;
use crate::stores::memories::{links_of, MemoryStore, SearchIndex};
use filter::Filter;
use fts::{fold_tokens, Leg};
use fuse::{boost_times, fuse, Fused};
use hits::{finish, load_rows, round6, truncate_body};
pub use request::Request;
use vec_leg::vec_leg_until;

/// Default and bounds of `limit`.
pub const DEFAULT_LIMIT: i64 = 10;
/// Largest `limit`; a larger one (or one below 1) is an argument error.
pub const MAX_LIMIT: i64 = 500;
/// Default `body_chars`.
pub const DEFAULT_BODY_CHARS: i64 = 280;
/// Hybrid's weight of the bm25 leg (see `Fusion`).
pub const BM25_WEIGHT: f64 = 1.0;
/// Hybrid's weight of the vec leg (see `Fusion`).
pub const VEC_WEIGHT: f64 = 0.3;
/// Hybrid's candidates per leg: fixed, not scaled from `limit`, so the first hits of a
/// call do not depend on `limit` (docs/performance.md, "Rows a client receives").
pub const CANDIDATES: usize = 20;
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
    /// What a candidate whose body refers to a time gains in a temporal question's
    /// fused score ([`temporal::BOOST`]; 0: no routing).
    pub temporal_boost: f64,
    /// The bm25 leg reads the Porter-stemmed FTS5 table ([`STEMMED`]).
    pub stemmed: bool,
    /// Candidates of each leg the fusion ranks ([`CANDIDATES`]).
    pub candidates: usize,
}

/// Hybrid's bm25 leg matches words by their Porter stem ("painting" finds "paints"),
/// through the store's `memories_stem` table; the `bm25` mode keeps the words as
/// written (docs/performance.md, "Stemmed keyword leg").
pub const STEMMED: bool = true;

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
        temporal_boost: temporal::BOOST,
        stemmed: STEMMED,
        candidates: CANDIDATES,
    };

    /// The parameters when the memories' model is the second tier ([`DEEP_VEC_WEIGHT`],
    /// [`DEEP_VEC_NORM`]): e5's cosines sit close together, so they are spread
    /// min-max before weighting.
    pub const DEEP: Self = Self {
        vec_weight: DEEP_VEC_WEIGHT,
        bm25_weight: BM25_WEIGHT,
        context: Some(CONTEXT),
        vec_norm: DEEP_VEC_NORM,
        temporal_boost: temporal::BOOST,
        stemmed: STEMMED,
        candidates: CANDIDATES,
    };
}

#[cfg(feature = "bench")]
static TUNING: super::Override<Tuning> = super::Override::new();

/// Replaces [`Tuning::DEFAULT`] for every later call in this process (`None` restores
/// it). For the quality harness (`benches/quality.rs`) only (feature `bench`).
#[cfg(feature = "bench")]
pub fn tune(t: Option<Tuning>) {
    TUNING.set(t);
}

/// The tuning of this call: the harness's override, else [`Tuning::DEEP`] when the
/// memories' model is the second tier, else [`Tuning::DEFAULT`].
fn tuning(deep: bool) -> Tuning {
    let default = if deep { Tuning::DEEP } else { Tuning::DEFAULT };
    #[cfg(feature = "bench")]
    let default = TUNING.get_or(default);
    default
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
            if crate::settings::debug_log() {
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
        for name in ["machine", "user"] {
            ctx.archive_only_argument(name, args.get(name).unwrap_or(&Value::Null))?;
        }
        if let Some(pool) = ctx.archive() {
            return archive::call(ctx, pool, &req);
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
    let ranking = rank(store, &conn, embedder, req)?;
    let map_err = |e: rusqlite::Error| EngineError::Store(store.error(e));
    render(&conn, ranking, req, &map_err, &|_, _| {})
}

/// The output of `ranking`: each fused hit's row read through `conn` (a store's
/// connection, or the archive's rows in a private database: [`archive`]) by its rowid,
/// with its links, cut body, score and explain; `extra(rowid, hit)` adds what the
/// source knows beside the row (the archive: its machine).
fn render(
    conn: &Connection,
    ranking: Ranking,
    req: &Request,
    map_err: &dyn Fn(rusqlite::Error) -> EngineError,
    extra: &dyn Fn(i64, &mut serde_json::Map<String, Value>),
) -> Result<Value, EngineError> {
    let Ranking {
        fused,
        tuning,
        notes,
        mut trace,
    } = ranking;
    stopped(req)?;
    let Some(fused) = fused else {
        return Ok(finish(req, Vec::new(), notes, req.explain.then_some(trace)));
    };
    let rows =
        load_rows(conn, &fused.iter().map(|f| f.rowid).collect::<Vec<_>>()).map_err(map_err)?;
    let ids: Vec<String> = rows
        .values()
        .filter_map(|r| r.get("id").and_then(Value::as_str).map(str::to_owned))
        .collect();
    let links = links_of(conn, &ids).map_err(map_err)?;
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
        extra(f.rowid, &mut hit);
        if req.explain {
            hit.insert("explain".into(), hits::explain(f, req.mode, &tuning));
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
    let map_err = |e: rusqlite::Error| EngineError::Store(store.error(e));
    let parsed = match parse(req, &embedder, &map_err)? {
        Ok(parsed) => parsed,
        Err(ranking) => return Ok(ranking),
    };
    let model = embedder.as_ref().ok().map(|e| (e.name(), e.dim()));
    stopped(req)?;
    let index = store.search_index(conn, model).map_err(map_err)?;
    stopped(req)?;
    let q = match (&embedder, req.mode) {
        (Ok(e), Mode::Vec | Mode::Hybrid) if index.embedded() > 0 => {
            Some(e.embed_query(&req.query))
        }
        _ => None,
    };
    rank_over(conn, &index, parsed, embedder, q.as_deref(), req, &map_err)
}

/// The query as the legs search it, before any row is read.
struct Parsed {
    /// Folded tokens, sorted, unique, at most [`MAX_TOKENS`].
    tokens: Vec<String>,
    tuning: Tuning,
    notes: Vec<String>,
    trace: Vec<Value>,
}

/// Folds the query's tokens and chooses the tuning: `Ok(Err(ranking))` when the query
/// has no searchable words (the ranking says so), else what the legs search.
fn parse(
    req: &Request,
    embedder: &Result<&Embedder, String>,
    map_err: &dyn Fn(rusqlite::Error) -> EngineError,
) -> Result<Result<Parsed, Ranking>, EngineError> {
    let mut notes = req.notes.clone();
    let mut trace: Vec<Value> = Vec::new();
    let tuning = tuning(embedder.as_ref().is_ok_and(|e| e.is_deep()));
    let mut tokens = fold_tokens(&req.query).map_err(map_err)?;
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
        return Ok(Err(Ranking {
            fused: None,
            tuning,
            notes,
            trace,
        }));
    }
    Ok(Ok(Parsed {
        tokens,
        tuning,
        notes,
        trace,
    }))
}

/// Runs the mode's legs over `index` (a store's snapshot, or the archive's rows that
/// can rank: [`archive`]) and `conn` (its rows by rowid) and fuses them. `q` is the
/// query's embedding by `embedder` (`None`: `index` holds no vector of its model).
#[allow(clippy::too_many_arguments)]
fn rank_over(
    conn: &Connection,
    index: &SearchIndex,
    parsed: Parsed,
    embedder: Result<&Embedder, String>,
    q: Option<&[f32]>,
    req: &Request,
    map_err: &dyn Fn(rusqlite::Error) -> EngineError,
) -> Result<Ranking, EngineError> {
    let Parsed {
        tokens,
        tuning,
        mut notes,
        mut trace,
    } = parsed;
    let mut leg = Leg {
        conn,
        index,
        filter: Filter::new(req),
        scorer: req.scorer,
        table: Table::Plain,
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
                leg.index,
                embedder.name(),
                q,
                mask,
                req.limit,
                req.scorer,
                &mut trace,
                &req.stop,
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
            // Deeper than the candidates only to continue a call asking for more hits.
            let n = tuning.candidates.max(req.limit);
            let mask = leg.filter.mask(leg.index);
            stopped(req)?;
            match embedder {
                Ok(embedder) => match vec_leg_until(
                    leg.index,
                    embedder.name(),
                    q,
                    mask,
                    n,
                    req.scorer,
                    &mut trace,
                    &req.stop,
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
            // Asked of the snapshot, which read the store's tables when it was loaded.
            if tuning.stemmed && leg.index.has_table(Table::Stemmed) {
                leg.table = Table::Stemmed;
            }
            let bm25 = match tuning.context {
                Some(around) => leg.bm25_in_context(&tokens, n, around, &mut trace),
                None => leg.bm25(&tokens, n, &mut trace),
            };
            legs.push(("bm25", bm25.map_err(map_err)?));
        }
    }
    stopped(req)?;
    let fused = if req.mode == Mode::Hybrid {
        // The fusion ranks each leg's first candidates only, whatever `limit` is.
        let candidates: Vec<(&'static str, Ranked)> = legs
            .iter()
            .map(|(name, ranked)| {
                (
                    *name,
                    ranked[..ranked.len().min(tuning.candidates)].to_vec(),
                )
            })
            .collect();
        let mut fused = fuse(req.mode, &candidates, usize::MAX, &tuning, &mut trace);
        // A temporal question re-ranks every fused candidate.
        if tuning.temporal_boost > 0.0 && temporal::is_temporal_question(&req.query) {
            boost_times(conn, &mut fused, tuning.temporal_boost, &mut trace).map_err(map_err)?;
        }
        fuse::beyond(
            &mut fused,
            &legs,
            &candidates,
            tuning.candidates,
            req.limit,
            &tuning,
        );
        fused.truncate(req.limit);
        fused
    } else {
        fuse(req.mode, &legs, req.limit, &tuning, &mut trace)
    };
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

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Utc};

    use super::*;
    use crate::model::Memory;

    fn memory(id: &str, body: &str) -> Memory {
        let t = DateTime::parse_from_rfc3339("2026-07-01T10:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        Memory {
            id: id.into(),
            title: format!("Note {id}"),
            kind: "fact".into(),
            tags: vec!["home".into()],
            created: t,
            updated: t,
            body: body.into(),
            files_read: vec!["notes/fence.md".into()],
            files_modified: vec!["notes/paint.md".into()],
            origin: None,
        }
    }

    fn hybrid(store: &MemoryStore, query: &str) -> Value {
        let req =
            Request::from_args(&json!({"query": query, "explain": true}), Utc::now()).unwrap();
        search(store, Err("no model in this test".into()), &req).unwrap()
    }

    fn ids(out: &Value) -> Vec<&str> {
        out["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["id"].as_str().unwrap())
            .collect()
    }

    /// In every mode, with and without a filter, the first k hits of a call with
    /// `limit` n > k are the hits of the call with `limit` k: 150 memories whose
    /// words overlap unevenly, limits on both sides of [`CANDIDATES`] (hybrid's legs
    /// then go deeper), a temporal question among the queries. The vec leg and
    /// hybrid's vec leg run when the embedding model is installed.
    #[test]
    fn the_first_rows_do_not_depend_on_limit() {
        let store = MemoryStore::open_in_memory().unwrap();
        let words = [
            "fence", "paint", "garden", "roof", "window", "door", "green",
        ];
        let days = ["", " last week", " on Monday", " in May"];
        for i in 0..150usize {
            let body = format!(
                "{} the {} and the {}{}; note {i}",
                words[i % 7],
                words[(i / 7) % 7],
                words[(i * 3 + 1) % 7],
                days[i % 4],
            );
            let mut m = memory(&format!("m{i:03}"), &body);
            m.kind = if i % 2 == 0 { "fact" } else { "decision" }.into();
            m.updated += chrono::Duration::minutes(i64::try_from(i % 13).unwrap());
            store.upsert(&m).unwrap();
        }
        let embedder = Embedder::load_default().ok();
        if let Some(e) = &embedder {
            crate::ingest::memories::embed_missing(&store, e).unwrap();
        }
        let model = || embedder.as_ref().ok_or_else(|| "no model".to_owned());
        let ids = |out: &Value| -> Vec<String> {
            out["hits"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| h["id"].as_str().unwrap().to_owned())
                .collect()
        };
        let limits = [1, 2, 5, 10, 19, 20, 21, 37, 60, 100, 149, 200];
        let mut deep = 0;
        for mode in ["hybrid", "bm25", "exact", "fuzzy", "vec"] {
            if mode == "vec" && embedder.is_none() {
                continue;
            }
            for query in [
                "fence paint",
                "When did we paint the roof?",
                "green garden door",
            ] {
                for filter in [json!({}), json!({"type": "decision"})] {
                    let call = |limit: usize| {
                        let mut args = filter.clone();
                        args["query"] = json!(query);
                        args["mode"] = json!(mode);
                        args["limit"] = json!(limit);
                        let req = Request::from_args(&args, Utc::now()).unwrap();
                        ids(&search(&store, model(), &req).unwrap())
                    };
                    let most = call(limits[limits.len() - 1]);
                    deep = deep.max(most.len());
                    for limit in limits {
                        assert_eq!(
                            call(limit),
                            most[..limit.min(most.len())],
                            "{mode} `{query}` {filter} limit {limit}"
                        );
                    }
                }
            }
        }
        assert!(
            deep > 100,
            "some call went past the candidates: {deep} hits"
        );
    }

    /// A read-only store open while another open upgrades the file in place (creates
    /// and fills `memories_stem`): hybrid's keyword leg reads the stemmed table from
    /// the next search on, as the snapshot reloads with the file's change.
    #[test]
    fn hybrid_searches_the_stemmed_table_of_a_store_upgraded_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("memories.sqlite");
        {
            let store = MemoryStore::open_rw(&path).unwrap();
            store.upsert(&memory("a", "painting the fence")).unwrap();
            store.upsert(&memory("b", "she paints on Sundays")).unwrap();
            store
                .lock()
                .execute_batch("DROP TABLE memories_stem")
                .unwrap();
        }
        let ro = MemoryStore::open_ro(&path).unwrap();
        // The plain table holds neither "painting" nor "paints" as "paint".
        assert_eq!(ids(&hybrid(&ro, "paint")), Vec::<&str>::new());
        drop(MemoryStore::open_rw(&path).unwrap());
        let after = hybrid(&ro, "paint");
        let mut found = ids(&after);
        found.sort_unstable();
        assert_eq!(found, ["a", "b"]);
    }

    /// A temporal question's hits show the same rows as a question that is not
    /// temporal (every field but score and explain), and only the bodies that refer to
    /// a time gain the boost.
    #[test]
    fn temporal_hits_show_the_same_rows_as_a_plain_question() {
        let store = MemoryStore::open_in_memory().unwrap();
        store
            .upsert(&memory("a", "We painted the fence last week."))
            .unwrap();
        store
            .upsert(&memory("b", "The fence paint is green."))
            .unwrap();
        store.upsert(&memory("c", "Nothing about it.")).unwrap();
        let temporal = hybrid(&store, "When did we paint the fence?");
        let plain = hybrid(&store, "did we paint the fence?");
        assert_eq!(ids(&temporal), ["a", "b"]);
        let strip = |out: &Value| -> Vec<Value> {
            let mut hits: Vec<Value> = out["hits"].as_array().unwrap().clone();
            for h in &mut hits {
                let h = h.as_object_mut().unwrap();
                h.remove("score");
                h.remove("explain");
            }
            hits.sort_by_key(|h| h["id"].as_str().unwrap().to_owned());
            hits
        };
        assert_eq!(strip(&temporal), strip(&plain));
        let boosts: Vec<Option<f64>> = temporal["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["explain"]["fusion"]["temporal"].as_f64())
            .collect();
        assert_eq!(boosts, [Some(temporal::BOOST), None]);
        let stage = temporal["trace"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["stage"] == "temporal")
            .unwrap();
        assert_eq!(stage["refer_to_time"], 1);
        assert_eq!(stage["candidates"], 2);
    }
}
