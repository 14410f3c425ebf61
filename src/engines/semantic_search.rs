//! Engine `semantic_search`: meaning-based recall over conversations, the L1 pair of
//! `search_conversations`.
//!
//! The query is embedded with the local model ([`crate::embed`]) and compared with the
//! store's L1 embeddings ([`crate::stores::conversations::embeddings`]: one 8-bit
//! vector per window of consecutive messages, written by `skills ingest`). The 8-bit
//! first pass bounds every score and only the few windows that can be in the top
//! `limit` are scored exactly, so the ranking is the exact one over the stored
//! vectors. Filters (`role`, `source`, `conversation_id`, `since`/`until`, `project`)
//! are a row mask over the windows (`project`, which the windows do not hold, through
//! the [`Scope`] of conversations and messages it keeps). Each window found is shown by its best message: the one of
//! its messages (passing the filters) whose own embedding is closest to the query,
//! read with its 200-character preview from the search index (DuckDB when the index
//! is unavailable).
//!
//! `mode = "hybrid"` adds two word legs and fuses the three by normalised scores
//! ([`shares`]): BM25 over the query's words from the postings the search index holds
//! ([`keyword_leg`], written by ingest, read in place), and the exact `ILIKE` leg of
//! search-conversations (same index path), whose hits come first, newest first, so a
//! message holding the query word for word is never lost below the others. A question
//! rarely appears word for word, but its rare words do: the keyword leg is what lifts
//! hybrid above semantic on LoCoMo (docs/performance.md, "semantic_search").
//!
//! The first rows of a call do not depend on `limit`: hybrid's legs take fixed
//! candidate depths ([`CANDIDATES`] windows and literal hits, [`KEYWORD_CANDIDATES`]
//! keyword hits), so the fused ranking is the same for every `limit` and a call returns
//! its first `limit` rows; a call asking for more rows than that ranking holds
//! continues it with the keyword leg's further hits, in their order (docs/performance.md,
//! "Rows a client receives").
//!
//! With `--archive`, `mode: semantic` answers from the team archive's vectors
//! (`semantic_search/archive.rs`); hybrid says it is not available there yet.

use std::collections::HashMap;

use serde_json::{json, Value};

use super::{Context, EngineError};
use crate::search::postings::Spread;
use crate::search::words;
use crate::stores::conversations::embeddings::{role, Filter, UnitHit, UnitSpec};
use crate::stores::conversations::index::{
    Hit, KeywordHit, KeywordQuery, Neighbourhood, Query, Unavailable,
};
use crate::stores::conversations::project::{Project, Scope};

/// Hybrid's weight of the semantic leg (the keyword leg's is 1; see [`shares`]).
pub const VEC_WEIGHT: f64 = 0.3;
/// Hybrid's share of a literal (`ILIKE`) hit: half the best keyword match.
pub const LITERAL_WEIGHT: f64 = 0.5;
/// The keyword leg's neighbourhood: each message is scored with the messages around it
/// in its conversation, so an answer that holds none of the question's words is found
/// through the turn it answers (docs/performance.md, "Context-aware keyword leg").
pub const CONTEXT: Neighbourhood = Neighbourhood {
    window: 2,
    spread: Spread::Document { weight: 0.5 },
};
/// The mode a call without `mode` gets: the best measured on LoCoMo.
pub const DEFAULT_MODE: &str = "hybrid";
/// Hybrid's candidate depth of the semantic and literal legs: fixed, not scaled from
/// `limit`, so the first rows of a call do not depend on `limit` (docs/performance.md,
/// "Rows a client receives": chosen on the LoCoMo dev half over 15, 30, 100 and 200).
pub const CANDIDATES: usize = 50;
/// Hybrid's candidate depth of the keyword leg (its hits beyond it only continue the
/// ranking of a call asking for more rows than the fused candidates hold).
pub const KEYWORD_CANDIDATES: usize = 60;

/// Hybrid's neighbourhood merge: after the fusion, a row whose message lies within
/// this many messages of a better row's message, in the same conversation, is absorbed
/// into that row (its message id and preview listed in the row's `absorbed`) instead of
/// taking a row of its own, so a call's rows cover more places while the absorbed
/// messages' text is still returned (docs/performance.md, "Rows that stand for their
/// neighbourhood"). 0: no merge.
pub const ABSORB: usize = 0;
/// The neighbourhood merge's depth ([`Tuning::absorb_depth`]): unbounded.
pub const ABSORB_DEPTH: usize = usize::MAX;
/// Rows per conversation before the others ([`Tuning::session_cap`]): unbounded.
pub const SESSION_CAP: usize = usize::MAX;
/// The row from which rows come from conversations not shown above ([`Tuning::novel_from`]):
/// none.
pub const NOVEL_FROM: usize = usize::MAX;
/// Maximal marginal relevance's weight of the score ([`Tuning::mmr`]): 1, the fused order.
pub const MMR: f64 = 1.0;

/// The keyword leg's depth for the rows of a call asking for more rows than the fused
/// ranking holds: fixed (twice the largest `limit`), so those rows are the same list
/// whatever `limit` is.
pub const KEYWORD_TAIL: usize = 1000;

/// The ranking parameters of hybrid mode, all in one place so the quality harness can
/// measure variants ([`tune`]); [`Tuning::DEFAULT`] is what every call uses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tuning {
    /// Weight of the semantic leg's share ([`VEC_WEIGHT`]).
    pub vec_weight: f64,
    /// The keyword leg's neighbourhood ([`CONTEXT`]); `None`: each message alone.
    pub context: Option<Neighbourhood>,
    /// Weight of a second keyword share: the message's own BM25 over the best own
    /// BM25 (0: the context score alone ranks).
    pub own_weight: f64,
    /// How the semantic leg's cosines are put on one scale ([`VEC_NORM`]).
    pub vec_norm: super::Norm,
    /// What a row whose preview refers to a time gains in a temporal question's fused
    /// score ([`super::temporal::BOOST`]; 0: no routing).
    pub temporal_boost: f64,
    /// The semantic and literal legs' depth ([`CANDIDATES`]).
    pub candidates: usize,
    /// The keyword leg's depth ([`KEYWORD_CANDIDATES`]).
    pub keyword_candidates: usize,
    /// Hybrid's neighbourhood merge ([`ABSORB`]): a row within this many messages of a
    /// better row of the same conversation is absorbed into it ([`absorb`]); 0: none.
    pub absorb: usize,
    /// The merge's depth ([`ABSORB_DEPTH`]): a row ranked this deep or deeper in the
    /// fused order that a better row's neighbourhood holds is dropped rather than
    /// absorbed (its text not returned).
    pub absorb_depth: usize,
    /// At most this many rows per conversation before every row of the other
    /// conversations ([`SESSION_CAP`]): the rows past it are moved below, in their order.
    pub session_cap: usize,
    /// From this row on (0-based), each row is the best remaining one of a conversation
    /// none of the rows above shows, while one remains ([`NOVEL_FROM`]).
    pub novel_from: usize,
    /// Maximal marginal relevance ([`MMR`]): the rows below the literal hits are picked
    /// greedily by `mmr` × score / best score − (1 − `mmr`) × the highest cosine of the
    /// row's preview with one picked above; 1: the fused order.
    pub mmr: f64,
}

/// The semantic leg's normalisation in hybrid (docs/performance.md, "Second tier").
pub const VEC_NORM: super::Norm = super::Norm::Best;
/// Hybrid's weight of the semantic leg over second-tier embeddings.
pub const DEEP_VEC_WEIGHT: f64 = 0.5;

impl Tuning {
    /// The shipped parameters.
    pub const DEFAULT: Self = Self {
        vec_weight: VEC_WEIGHT,
        context: Some(CONTEXT),
        own_weight: 0.0,
        vec_norm: VEC_NORM,
        temporal_boost: super::temporal::BOOST,
        candidates: CANDIDATES,
        keyword_candidates: KEYWORD_CANDIDATES,
        absorb: ABSORB,
        absorb_depth: ABSORB_DEPTH,
        session_cap: SESSION_CAP,
        novel_from: NOVEL_FROM,
        mmr: MMR,
    };

    /// The parameters when the conversations were embedded by the second tier
    /// (`skills ingest --embedder deep`): e5's cosines spread min-max, weighted
    /// [`DEEP_VEC_WEIGHT`].
    pub const DEEP: Self = Self {
        vec_weight: DEEP_VEC_WEIGHT,
        context: Some(CONTEXT),
        own_weight: 0.0,
        vec_norm: super::Norm::MinMax,
        temporal_boost: super::temporal::BOOST,
        candidates: CANDIDATES,
        keyword_candidates: KEYWORD_CANDIDATES,
        absorb: ABSORB,
        absorb_depth: ABSORB_DEPTH,
        session_cap: SESSION_CAP,
        novel_from: NOVEL_FROM,
        mmr: MMR,
    };
}

#[cfg(feature = "bench")]
static TUNING: super::Override<Tuning> = super::Override::new();

/// Replaces [`Tuning::DEFAULT`] for every later call in this process (`None` restores
/// it). For the quality harness (`benches/locomo_semantic.rs`) only (feature `bench`).
#[cfg(feature = "bench")]
pub fn tune(t: Option<Tuning>) {
    TUNING.set(t);
}

/// The tuning of this call: the harness's override, else [`Tuning::DEEP`] when the
/// stored embeddings are the second tier's, else [`Tuning::DEFAULT`].
fn tuning(deep: bool) -> Tuning {
    let default = if deep { Tuning::DEEP } else { Tuning::DEFAULT };
    #[cfg(feature = "bench")]
    let default = TUNING.get_or(default);
    default
}

/// The message every call without stored embeddings fails with.
pub const UNAVAILABLE: &str = "embeddings unavailable — run `skills ingest`";

/// The engine (stateless; stores and model come from the [`Context`]).
pub struct SemanticSearch;

/// A time filter argument: RFC 3339 or `YYYY-MM-DD` (UTC; as `until`, a bare date
/// takes in the whole day). µs since the epoch.
fn time_arg(args: &Value, name: &str) -> Result<Option<i64>, EngineError> {
    let Some(raw) = args.get(name).and_then(Value::as_str) else {
        return Ok(None);
    };
    let bad = || EngineError::Argument {
        name: name.into(),
        reason: format!("expected a UTC date `YYYY-MM-DD` or an RFC 3339 time, got `{raw}`"),
    };
    let t = raw.trim();
    if let Ok(d) = chrono::NaiveDate::parse_from_str(t, "%Y-%m-%d") {
        let day = if name == "until" {
            d.succ_opt().ok_or_else(bad)?
        } else {
            d
        };
        let start = day.and_hms_opt(0, 0, 0).ok_or_else(bad)?.and_utc();
        return Ok(Some(start.timestamp_micros()));
    }
    let at = crate::time::parse_timestamp(t).ok_or_else(bad)?;
    // `until` with a time is exclusive of later messages, inclusive of that instant.
    let us = at.timestamp_micros();
    Ok(Some(if name == "until" { us + 1 } else { us }))
}

/// A result row before it is shaped as JSON.
#[derive(Debug, Clone)]
struct Row {
    hit: Hit,
    first: String,
    last: String,
    score: f64,
    semantic: bool,
    /// Found by the literal leg: its rank there (0-based; the leg is newest first).
    literal: Option<usize>,
    /// Found by the query-words leg ([`keyword_leg`]).
    keyword: bool,
    /// Keys (`message_id`) of the window's messages.
    window: Vec<String>,
    /// Rows absorbed into this one by the neighbourhood merge ([`absorb`]): each
    /// absorbed row's shown message, its 1-based rank in the fused order and its score,
    /// in conversation order.
    absorbed: Vec<(Hit, usize, f64)>,
    /// Why the row ranks where it does: per leg that found it, its rank (1-based), raw
    /// score and share of the fused score (`explain: true` shows it).
    legs: serde_json::Map<String, Value>,
}

impl Row {
    /// A row of one message found only by a word leg: the literal leg (`literal`, its
    /// rank there) or the keyword leg (`None`).
    fn lone(hit: Hit, score: f64, literal: Option<usize>) -> Self {
        Self {
            first: hit.message_id.clone(),
            last: hit.message_id.clone(),
            window: vec![hit.message_id.clone()],
            hit,
            score,
            semantic: false,
            literal,
            keyword: literal.is_none(),
            absorbed: Vec::new(),
            legs: serde_json::Map::new(),
        }
    }
}

impl super::Engine for SemanticSearch {
    fn name(&self) -> &'static str {
        "semantic_search"
    }

    /// Output shape: `{"query": str, "mode": "semantic"|"hybrid", "limit": int,
    /// "count": int, "model": str, "unit": {"window", "stride", "title"},
    /// "rows": [{"date": "YYYY-MM-DD", "created": "YYYY-MM-DDTHH:MM:SS.ffffffZ",
    /// "source", "role", "conversation_id", "message_id", "first_message_id",
    /// "last_message_id", "score": number, "match": "semantic"|"literal"|"both",
    /// "preview"}]}`, best first. `score`: in `semantic` mode the cosine of the query
    /// with the window's stored vector (higher is closer, ≤ 1); in `hybrid` the sum of
    /// the legs' normalised shares ([`shares`]: at most 1.8).
    fn call(&self, args: &Value, ctx: &Context) -> Result<Value, EngineError> {
        let query = args.get("query").and_then(Value::as_str).unwrap_or("");
        if query.trim().is_empty() {
            return Err(EngineError::Argument {
                name: "query".into(),
                reason: "expected a non-empty text".into(),
            });
        }
        let limit = args.get("limit").and_then(Value::as_i64).unwrap_or(15);
        if !(1..=500).contains(&limit) {
            return Err(EngineError::Argument {
                name: "limit".into(),
                reason: format!("expected an integer in 1..=500, got {limit}"),
            });
        }
        let limit = usize::try_from(limit).unwrap_or(15);
        let hybrid = match args
            .get("mode")
            .and_then(Value::as_str)
            .unwrap_or(DEFAULT_MODE)
        {
            "semantic" => false,
            "hybrid" => true,
            other => {
                return Err(EngineError::Argument {
                    name: "mode".into(),
                    reason: format!("expected `semantic` or `hybrid`, got `{other}`"),
                })
            }
        };
        let role_arg = args.get("role").and_then(Value::as_str);
        let min_score = args.get("min_score").and_then(Value::as_f64);
        #[allow(clippy::cast_possible_truncation)]
        let min_score_f32 = min_score.map_or(f32::NEG_INFINITY, |m| m as f32);
        let since = time_arg(args, "since")?;
        let until = time_arg(args, "until")?;
        let project = Project::from_arg(args.get("project").and_then(Value::as_str));
        for name in ["machine", "user"] {
            ctx.archive_only_argument(name, args.get(name).unwrap_or(&Value::Null))?;
        }
        if let Some(pool) = ctx.archive() {
            let call = archive::Call {
                query,
                limit,
                hybrid,
                role: role_arg,
                min_score: min_score_f32,
                filter: Filter {
                    roles: role_arg.map_or(0, role::bit),
                    source: args.get("source").and_then(Value::as_str),
                    conversation_id: args.get("conversation_id").and_then(Value::as_str),
                    since_us: since,
                    until_us: until,
                    project: None,
                },
                whose: crate::archive::meaning::Whose {
                    project: project.as_ref().map(Project::fragment),
                    machine: args.get("machine").and_then(Value::as_str),
                    user: args.get("user").and_then(Value::as_str),
                },
                explain: args
                    .get("explain")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            };
            return archive::call(ctx, pool, &call);
        }
        let scope = match &project {
            Some(p) => Some(scope_of(ctx, p)?),
            None => None,
        };
        let filter = Filter {
            roles: role_arg.map_or(0, role::bit),
            source: args.get("source").and_then(Value::as_str),
            conversation_id: args.get("conversation_id").and_then(Value::as_str),
            since_us: since,
            until_us: until,
            project: scope.as_ref(),
        };
        let embeddings = match ctx.conversation_embeddings() {
            Ok(e) => e,
            Err(Unavailable::Missing) => {
                // No ingest can embed without a model: name the model, not an ingest.
                if let Err(e @ crate::embed::EmbedError::NotFound(_)) = ctx.embedder() {
                    return Err(EngineError::Unavailable(format!("embeddings unavailable: {e}")));
                }
                return Err(EngineError::Unavailable(UNAVAILABLE.into()));
            }
            Err(Unavailable::Stale) => {
                return Err(EngineError::Unavailable(format!(
                    "{UNAVAILABLE} (they are older than the store: another tool or an ingest with `--no-embed` wrote it since)"
                )))
            }
            Err(Unavailable::Corrupt(why)) => {
                return Err(EngineError::Unavailable(format!(
                    "{UNAVAILABLE} (the stored embeddings are damaged: {why})"
                )))
            }
        };
        let embedder = ctx
            .embedder_for(&embeddings.manifest().model)
            .map_err(|e| EngineError::Unavailable(format!("embedding unavailable: {e}")))?;
        if embedder.name() != embeddings.manifest().model
            || embedder.dim() != embeddings.manifest().dim as usize
        {
            return Err(EngineError::Unavailable(format!(
                "{UNAVAILABLE} (they were made by `{}`, the model loaded now is `{}`: \
                 `scripts/fetch-model` fetches both tiers; `skills ingest --embedder static|deep` \
                 re-embeds with one)",
                embeddings.manifest().model,
                embedder.name()
            )));
        }
        let q = embedder.embed_query(query);
        let tuning = tuning(embedder.is_deep());
        let threads = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        // Semantic mode ranks the windows alone: its first `limit` are the exact ranking's.
        let depth = if hybrid { tuning.candidates } else { limit };
        let units = embeddings
            .search(&q, depth, &filter, min_score_f32, threads, ctx.cancel())
            .map_err(|_| EngineError::Query("the stored embeddings are damaged".into()))?;
        let texts = Texts::fetch(ctx, &units)?;
        let mut rows = Vec::with_capacity(units.len());
        for u in &units {
            if let Some(row) = best_message(u, &texts, &filter, role_arg, &q, &embedder) {
                rows.push(row);
            }
        }
        if hybrid {
            let literal = literal_leg(
                ctx,
                query,
                tuning.candidates,
                &filter,
                role_arg,
                project.as_ref(),
            )?;
            let keyword_at = |depth: usize| {
                keyword_leg(
                    ctx,
                    query,
                    depth,
                    &filter,
                    role_arg,
                    tuning.context,
                    project.as_ref(),
                )
            };
            let boost = if super::temporal::is_temporal_question(query) {
                tuning.temporal_boost
            } else {
                0.0
            };
            let index = ctx.conversations_index().ok();
            let around = |h: &Hit| -> Vec<String> {
                index.as_ref().map_or_else(Vec::new, |ix| {
                    ix.around(
                        h.created_us,
                        &h.source,
                        &h.conversation_id,
                        &h.message_id,
                        tuning.absorb,
                    )
                    .map(|hits| hits.into_iter().map(|n| n.message_id).collect())
                    .unwrap_or_default()
                })
            };
            let embed = |text: &str| embedder.embed(text);
            rows = hybrid_rows(
                rows,
                literal,
                &keyword_at,
                &around,
                &embed,
                &tuning,
                boost,
                limit,
            );
        } else {
            for (i, r) in rows.iter_mut().enumerate() {
                r.legs
                    .insert("semantic".into(), json!({"rank": i + 1, "cosine": r.score}));
            }
        }
        let explain = args
            .get("explain")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        fill_projects(ctx, &mut rows)?;
        let unit = embeddings.manifest().unit;
        let out: Vec<Value> = rows
            .iter()
            .map(|r| {
                let mut row = row_json(r);
                if explain {
                    row["explain"] = json!({"legs": r.legs});
                    if !r.absorbed.is_empty() {
                        row["explain"]["absorbed"] = r
                            .absorbed
                            .iter()
                            .map(|(h, rank, score)| {
                                json!({"message_id": h.message_id, "rank": rank, "score": score})
                            })
                            .collect();
                    }
                }
                row
            })
            .collect();
        let mut result = json!({
            "query": query,
            "mode": if hybrid { "hybrid" } else { "semantic" },
            "limit": limit,
            "count": out.len(),
            "model": embeddings.manifest().model,
            "unit": unit_json(unit),
            "rows": out,
            "project": project.as_ref().map(Project::fragment),
        });
        if explain {
            result["explain"] = explain_json(hybrid, &tuning, query);
        }
        Ok(result)
    }
}

/// The call-wide part of `explain`: how the legs were fused and which query words the
/// keyword leg scored.
fn explain_json(hybrid: bool, tuning: &Tuning, query: &str) -> Value {
    if !hybrid {
        return json!({"method": "semantic", "score": "cosine of the query with the window's stored vector"});
    }
    let context = tuning.context.map(|c| {
        let (spread, weight) = match c.spread {
            Spread::Sum { weight } => ("sum", weight),
            Spread::Document { weight } => ("document", weight),
        };
        json!({"window": c.window, "spread": spread, "weight": weight})
    });
    let mut out = json!({
        "method": "normalised",
        "weights": {
            "semantic": tuning.vec_weight,
            "keyword": 1.0,
            "keyword_own": tuning.own_weight,
            "literal": LITERAL_WEIGHT,
        },
        "keyword_terms": query_terms(query),
        "context": context,
        "temporal": super::temporal::is_temporal_question(query).then_some(tuning.temporal_boost),
        "score": "Σ of the legs' shares: semantic weight × cosine / best cosine; keyword BM25 with neighbours / best; literal a fixed share; + the temporal boost when the question asks when and the message refers to a time",
    });
    // The neighbourhood merge, shown only when on (off by default: "Five rows that
    // cover more places" in docs/performance.md).
    if tuning.absorb > 0 {
        out["absorb"] = json!({"window": tuning.absorb, "depth": tuning.absorb_depth});
    }
    out
}

fn unit_json(u: UnitSpec) -> Value {
    json!({"window": u.window, "stride": u.stride, "title": u.title})
}

fn row_json(r: &Row) -> Value {
    let t = chrono::DateTime::from_timestamp_micros(r.hit.created_us).unwrap_or_default();
    let mut row = json!({
        "date": t.format("%Y-%m-%d").to_string(),
        "created": t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string(),
        "source": r.hit.source,
        "role": r.hit.role,
        "conversation_id": r.hit.conversation_id,
        "message_id": r.hit.message_id,
        "project": r.hit.project,
        "first_message_id": r.first,
        "last_message_id": r.last,
        "score": r.score,
        "match": match (r.semantic, r.literal.is_some(), r.keyword) {
            (true, true, _) | (true, false, true) => "both",
            (false, true, _) => "literal",
            (false, false, true) => "keyword",
            _ => "semantic",
        },
        "preview": r.hit.preview,
        "cites": super::cites_message(&r.hit.source, &r.hit.conversation_id, &r.hit.message_id),
    });
    // Only a row that absorbed others carries the field (the merge is hybrid's).
    if !r.absorbed.is_empty() {
        row["absorbed"] = r
            .absorbed
            .iter()
            .map(|(h, _, _)| {
                let t = chrono::DateTime::from_timestamp_micros(h.created_us).unwrap_or_default();
                json!({
                    "message_id": h.message_id,
                    "role": h.role,
                    "created": t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string(),
                    "preview": h.preview,
                })
            })
            .collect();
    }
    row
}

type Key = (String, String, String);

/// The rows and folded texts of the found windows' messages.
struct Texts(HashMap<Key, (Hit, String)>);

impl Texts {
    /// Reads the messages of `units` from the search index, or from DuckDB when the
    /// index is unavailable (or lacks one of them).
    fn fetch(ctx: &Context, units: &[UnitHit]) -> Result<Self, EngineError> {
        let mut found = HashMap::new();
        let mut missing: Vec<Key> = Vec::new();
        let index = ctx.conversations_index().ok();
        for u in units {
            for m in &u.messages {
                let key = (
                    u.source.clone(),
                    u.conversation_id.clone(),
                    m.message_id.clone(),
                );
                let hit = index.as_ref().and_then(|ix| {
                    ix.lookup(m.created_us, &u.source, &u.conversation_id, &m.message_id)
                        .ok()
                        .flatten()
                });
                match hit {
                    Some(h) => {
                        found.insert(key, h);
                    }
                    None => missing.push(key),
                }
            }
        }
        if !missing.is_empty() {
            let store = ctx.conversations()?;
            let conn = store.connection()?;
            for chunk in missing.chunks(300) {
                let values = vec!["(?, ?, ?)"; chunk.len()].join(", ");
                let sql = format!(
                    "SELECT epoch_us(created), source, role, conversation_id, message_id, \
                     substr(content, 1, 200), lower(content), project FROM all_conversations \
                     WHERE (source, conversation_id, message_id) IN (SELECT * FROM (VALUES {values}))"
                );
                let params: Vec<&dyn duckdb::ToSql> = chunk
                    .iter()
                    .flat_map(|(s, c, m)| [s as &dyn duckdb::ToSql, c, m])
                    .collect();
                let mut stmt = conn.prepare(&sql).map_err(|e| store.error(e))?;
                let rows = stmt
                    .query_map(params.as_slice(), |r| {
                        Ok((
                            Hit {
                                created_us: r.get(0)?,
                                source: r.get(1)?,
                                role: r.get(2)?,
                                conversation_id: r.get(3)?,
                                message_id: r.get(4)?,
                                project: r.get(7)?,
                                preview: r.get(5)?,
                            },
                            r.get::<_, String>(6)?,
                        ))
                    })
                    .map_err(|e| store.error(e))?;
                for row in rows {
                    let (hit, text) = row.map_err(|e| store.error(e))?;
                    let key = (
                        hit.source.clone(),
                        hit.conversation_id.clone(),
                        hit.message_id.clone(),
                    );
                    found.insert(key, (hit, text));
                }
            }
        }
        Ok(Self(found))
    }
}

/// The row showing window `u`: its message that passes the filters and whose own
/// embedding is closest to the query (the first on ties); `None` when none passes.
fn best_message(
    u: &UnitHit,
    texts: &Texts,
    filter: &Filter<'_>,
    role_arg: Option<&str>,
    q: &[f32],
    embedder: &crate::embed::Embedder,
) -> Option<Row> {
    let mut best: Option<(f32, &Hit)> = None;
    for m in &u.messages {
        if role_arg.is_some_and(|r| m.role != r)
            || filter.since_us.is_some_and(|s| m.created_us < s)
            || filter.until_us.is_some_and(|s| m.created_us >= s)
            || filter
                .project
                .is_some_and(|p| !p.keeps(&u.source, &u.conversation_id, &m.message_id))
        {
            continue;
        }
        let key = (
            u.source.clone(),
            u.conversation_id.clone(),
            m.message_id.clone(),
        );
        let Some((hit, text)) = texts.0.get(&key) else {
            continue;
        };
        let score = if u.messages.len() == 1 {
            0.0
        } else {
            crate::search::vectors::cosine(q, &embedder.embed(text))
        };
        if best.is_none_or(|(b, _)| score > b) {
            best = Some((score, hit));
        }
    }
    let (_, hit) = best?;
    Some(Row {
        hit: hit.clone(),
        first: u.messages.first()?.message_id.clone(),
        last: u.messages.last()?.message_id.clone(),
        score: f64::from(u.score),
        semantic: true,
        literal: None,
        keyword: false,
        window: u.messages.iter().map(|m| m.message_id.clone()).collect(),
        absorbed: Vec::new(),
        legs: serde_json::Map::new(),
    })
}

/// The conversations and messages `project` keeps: from the search index when it
/// holds the project column, else from DuckDB.
fn scope_of(ctx: &Context, project: &Project) -> Result<Scope, EngineError> {
    if let Ok(index) = ctx.conversations_index() {
        if let Ok(Some(scope)) = Scope::from_index(&index, project) {
            return Ok(scope);
        }
    }
    let store = ctx.conversations()?;
    let conn = store.connection()?;
    Ok(Scope::from_duckdb(&conn, project).map_err(|e| store.error(e))?)
}

/// Fills the `project` of rows read from a search index written before the project
/// column (until the next ingest rewrites it), from DuckDB.
fn fill_projects(ctx: &Context, rows: &mut [Row]) -> Result<(), EngineError> {
    let stale = match ctx.conversations_index() {
        Ok(index) => !index.has_projects(),
        Err(_) => false,
    };
    if !stale || rows.is_empty() {
        return Ok(());
    }
    let store = ctx.conversations()?;
    let conn = store.connection()?;
    let values = vec!["(?, ?, ?)"; rows.len()].join(", ");
    let sql = format!(
        "SELECT source, conversation_id, message_id, project FROM all_conversations \
         WHERE (source, conversation_id, message_id) IN (SELECT * FROM (VALUES {values}))"
    );
    let params: Vec<&dyn duckdb::ToSql> = rows
        .iter()
        .flat_map(|r| {
            [
                &r.hit.source as &dyn duckdb::ToSql,
                &r.hit.conversation_id,
                &r.hit.message_id,
            ]
        })
        .collect();
    let mut stmt = conn.prepare(&sql).map_err(|e| store.error(e))?;
    let found: HashMap<Key, Option<String>> = stmt
        .query_map(params.as_slice(), |r| {
            Ok(((r.get(0)?, r.get(1)?, r.get(2)?), r.get(3)?))
        })
        .map_err(|e| store.error(e))?
        .collect::<Result<_, _>>()
        .map_err(|e| store.error(e))?;
    drop(params);
    for r in rows {
        let key = (
            r.hit.source.clone(),
            r.hit.conversation_id.clone(),
            r.hit.message_id.clone(),
        );
        r.hit.project = found.get(&key).cloned().flatten();
    }
    Ok(())
}

/// Whether an index hit passes the source, conversation and time filters (the role
/// filter is applied by the index query itself).
fn hit_passes(filter: &Filter<'_>, h: &Hit) -> bool {
    filter.source.is_none_or(|s| h.source == s)
        && filter
            .conversation_id
            .is_none_or(|c| h.conversation_id == c)
        && filter.since_us.is_none_or(|s| h.created_us >= s)
        && filter.until_us.is_none_or(|s| h.created_us < s)
}

/// The exact `ILIKE` leg: search-conversations' rows for `query` as the term (its
/// index path; DuckDB when the index is unavailable or other filters cut its rows),
/// newest first, at most `limit` (hybrid's [`Tuning::candidates`]), with every filter
/// applied.
fn literal_leg(
    ctx: &Context,
    query: &str,
    limit: usize,
    filter: &Filter<'_>,
    role_arg: Option<&str>,
    project: Option<&Project>,
) -> Result<Vec<Hit>, EngineError> {
    // The literal leg is `ILIKE`: the same wildcard bound as search-conversations.
    super::search_conversations::check_wildcards("query", query)?;
    let passes = |h: &Hit| hit_passes(filter, h);
    let extra = filter.source.is_some()
        || filter.conversation_id.is_some()
        || filter.since_us.is_some()
        || filter.until_us.is_some();
    let index = ctx
        .conversations_index()
        .ok()
        .filter(|ix| project.is_none() || ix.has_projects());
    if let Some(index) = index {
        let fetch = if extra { 2000.max(limit) } else { limit };
        let q = Query {
            term: Some(query),
            role: role_arg,
            exclude_injected: true,
            limit: fetch,
            stop: ctx.cancel(),
        };
        if let Ok(hits) = index.search_in(&q, project) {
            // Fewer rows than asked: the leg is complete, so filtering them is exact.
            if !extra || hits.len() < fetch {
                return Ok(hits.into_iter().filter(passes).take(limit).collect());
            }
        }
    }
    let store = ctx.conversations()?;
    let not_injected = if store.marks_injected()? {
        " AND NOT is_injected"
    } else {
        ""
    };
    let mut sql = String::from(
        "SELECT epoch_us(created), source, role, conversation_id, message_id, substr(content, 1, 200), \
         project FROM all_conversations WHERE content ILIKE '%' || ? || '%'",
    );
    let mut params: Vec<Box<dyn duckdb::ToSql>> = vec![Box::new(query.to_owned())];
    if let Some(r) = role_arg {
        sql.push_str(" AND role = ?");
        params.push(Box::new(r.to_owned()));
        if r == "user" {
            sql.push_str(not_injected);
        }
    }
    if let Some(s) = filter.source {
        sql.push_str(" AND source = ?");
        params.push(Box::new(s.to_owned()));
    }
    if let Some(c) = filter.conversation_id {
        sql.push_str(" AND conversation_id = ?");
        params.push(Box::new(c.to_owned()));
    }
    if let Some(s) = filter.since_us {
        sql.push_str(" AND epoch_us(created) >= ?");
        params.push(Box::new(s));
    }
    if let Some(u) = filter.until_us {
        sql.push_str(" AND epoch_us(created) < ?");
        params.push(Box::new(u));
    }
    if let Some(p) = project {
        sql.push_str(" AND ");
        sql.push_str(Project::SQL);
        params.push(Box::new(p.sql_param()));
    }
    sql.push_str(" ORDER BY created DESC, source ASC, conversation_id ASC, message_id ASC LIMIT ?");
    params.push(Box::new(i64::try_from(limit).unwrap_or(500)));
    let conn = store.connection()?;
    let mut stmt = conn.prepare(&sql).map_err(|e| store.error(e))?;
    let refs: Vec<&dyn duckdb::ToSql> = params.iter().map(AsRef::as_ref).collect();
    let rows = stmt
        .query_map(refs.as_slice(), |r| {
            Ok(Hit {
                created_us: r.get(0)?,
                source: r.get(1)?,
                role: r.get(2)?,
                conversation_id: r.get(3)?,
                message_id: r.get(4)?,
                project: r.get(6)?,
                preview: r.get(5)?,
            })
        })
        .map_err(|e| store.error(e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| store.error(e))?;
    Ok(rows)
}

/// Terms of a query the keyword leg scores: [`words::query_terms`], at most
/// [`KEYWORD_WORDS`] of them.
pub fn query_terms(query: &str) -> Vec<String> {
    words::query_terms(query, KEYWORD_WORDS)
}

/// At most this many query words are scored by the keyword leg.
pub const KEYWORD_WORDS: usize = 16;

/// The keyword leg: the conversations index's BM25 over its postings
/// ([`index::Index::keyword_in_context`]) for [`query_terms`], each message scored with
/// its `context` (none: alone), every filter applied, best first, at most `limit`
/// (hybrid's [`Tuning::keyword_candidates`], deeper only to continue a call asking for
/// more rows).
/// Empty when the search index is unavailable or predates postings (said once on
/// stderr): this leg only refines the ranking, the literal leg and the semantic leg
/// still answer.
fn keyword_leg(
    ctx: &Context,
    query: &str,
    limit: usize,
    filter: &Filter<'_>,
    role_arg: Option<&str>,
    context: Option<Neighbourhood>,
    project: Option<&Project>,
) -> Vec<KeywordHit> {
    let terms = query_terms(query);
    if terms.is_empty() {
        return Vec::new();
    }
    let Ok(index) = ctx.conversations_index() else {
        return Vec::new();
    };
    let q = KeywordQuery {
        terms: &terms,
        role: role_arg,
        exclude_injected: true,
        source: filter.source,
        conversation_id: filter.conversation_id,
        since_us: filter.since_us,
        until_us: filter.until_us,
        limit,
        stop: ctx.cancel(),
    };
    if project.is_some() && !index.has_projects() {
        super::note_once(
            "note: semantic-search: the search index predates the project column; hybrid \
             ranks without its keyword leg until `skills ingest` rewrites it."
                .to_owned(),
        );
        return Vec::new();
    }
    let found = match (context, project) {
        (around, Some(p)) => index.keyword_in_context_in(&q, around, Some(p)),
        (Some(around), None) => index.keyword_in_context(&q, around),
        (None, None) => index.keyword(&q).map(|o| {
            o.map(|hits| {
                hits.into_iter()
                    .map(|(score, hit)| KeywordHit {
                        score,
                        own: score,
                        hit,
                    })
                    .collect()
            })
        }),
    };
    match found {
        Ok(Some(hits)) => hits,
        Ok(None) => {
            super::note_once(
                "note: semantic-search: the search index predates keyword postings; hybrid \
                 ranks without its keyword leg until `skills ingest` rewrites it."
                    .to_owned(),
            );
            Vec::new()
        }
        Err(_) => Vec::new(),
    }
}

/// A word leg's hit with its share of the fused score and its explanation.
type Scored = (f64, Hit, Value);

/// Each leg's share of a hybrid score (score-normalised fusion, as memo-search's
/// hybrid): a semantic row adds `vec_weight` × its cosine on [0, 1] by `vec_norm`
/// (over the best row's, clamped at 0; or min-max over the leg's rows), a keyword hit its BM25 score (with its neighbours) over the best hit's
/// (weight 1) plus `own_weight` × its own BM25 over the best own, a literal hit
/// [`LITERAL_WEIGHT`]. Chosen on the LoCoMo dev half over RRF (k = 60), which ranked
/// below the keyword leg alone (docs/performance.md, "semantic_search").
fn shares(
    mut semantic: Vec<Row>,
    literal: Vec<Hit>,
    keyword: Vec<KeywordHit>,
    tuning: &Tuning,
) -> (Vec<Row>, Vec<Scored>, Vec<Scored>) {
    let best = |scores: &mut dyn Iterator<Item = f64>| scores.fold(0.0, f64::max);
    let best_cos = best(&mut semantic.iter().map(|r| r.score));
    let worst_cos = semantic.iter().map(|r| r.score).fold(best_cos, f64::min);
    for (i, r) in semantic.iter_mut().enumerate() {
        let cosine = r.score;
        r.score = tuning.vec_weight * tuning.vec_norm.apply(r.score, best_cos, worst_cos);
        r.legs.insert(
            "semantic".into(),
            json!({"rank": i + 1, "cosine": cosine, "share": r.score}),
        );
    }
    let best_bm25 = best(&mut keyword.iter().map(|k| k.score));
    let best_own = best(&mut keyword.iter().map(|k| k.own));
    let over = |x: f64, best: f64| if best > 0.0 { x / best } else { 0.0 };
    let keyword = keyword
        .into_iter()
        .enumerate()
        .map(|(i, k)| {
            let share = over(k.score, best_bm25) + tuning.own_weight * over(k.own, best_own);
            let why = json!({
                "rank": i + 1, "bm25": k.score, "own": k.own,
                "neighbours": k.score - k.own, "share": share,
            });
            (share, k.hit, why)
        })
        .collect();
    let literal = literal
        .into_iter()
        .enumerate()
        .map(|(i, h)| {
            (
                LITERAL_WEIGHT,
                h,
                json!({"rank": i + 1, "share": LITERAL_WEIGHT}),
            )
        })
        .collect();
    (semantic, literal, keyword)
}

/// Merges the legs' rows, each adding its share ([`shares`]); a literal hit inside a
/// semantic window becomes that window's shown message. A temporal question (a
/// positive `boost`) adds `boost` to every row whose shown message refers to a time
/// (docs/performance.md "Temporal questions"). Every row, in one order that no `limit`
/// changes: the literal hits first, in the literal leg's order (newest first), so a
/// message holding the query word for word is never cut; then the others best first
/// (ties: the semantic order, then the keyword order).
fn fuse(semantic: Vec<Row>, literal: Vec<Scored>, keyword: Vec<Scored>, boost: f64) -> Vec<Row> {
    let mut rows = semantic;
    for (rank, (share, hit, why)) in literal.into_iter().enumerate() {
        let within = rows.iter().position(|r| {
            r.semantic
                && r.hit.source == hit.source
                && r.hit.conversation_id == hit.conversation_id
                && r.window.contains(&hit.message_id)
        });
        match within {
            Some(at) if rows[at].literal.is_none() => {
                let r = &mut rows[at];
                r.score += share;
                r.literal = Some(rank);
                r.hit = hit;
                r.legs.insert("literal".into(), why);
            }
            _ => {
                let mut r = Row::lone(hit, share, Some(rank));
                r.legs.insert("literal".into(), why);
                rows.push(r);
            }
        }
    }
    // The keyword leg adds its share to the row holding its message (a semantic
    // window containing it, or the literal row of it), else a row of its own.
    for (share, hit, why) in keyword {
        let within = rows.iter().position(|r| {
            r.hit.source == hit.source
                && r.hit.conversation_id == hit.conversation_id
                && (r.window.contains(&hit.message_id) || r.hit.message_id == hit.message_id)
        });
        match within {
            Some(at) if !rows[at].keyword => {
                rows[at].score += share;
                rows[at].keyword = true;
                rows[at].legs.insert("keyword".into(), why);
            }
            Some(_) => {}
            None => {
                let mut r = Row::lone(hit, share, None);
                r.legs.insert("keyword".into(), why);
                rows.push(r);
            }
        }
    }
    if boost > 0.0 {
        for r in &mut rows {
            if super::temporal::refers_to_time(&r.hit.preview) {
                r.score += boost;
                r.legs.insert("temporal".into(), json!({"boost": boost}));
            }
        }
    }
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by(|&a, &b| {
        // `None` (not literal) after every literal rank.
        let literal = |i: usize| rows[i].literal.unwrap_or(usize::MAX);
        literal(a)
            .cmp(&literal(b))
            .then(rows[b].score.total_cmp(&rows[a].score))
            .then(a.cmp(&b))
    });
    let mut slots: Vec<Option<Row>> = rows.into_iter().map(Some).collect();
    order.into_iter().filter_map(|i| slots[i].take()).collect()
}

/// Hybrid's first `limit` rows from the semantic leg's `semantic` rows and the literal
/// leg's `literal` hits (each [`Tuning::candidates`] deep) and the keyword leg, asked
/// for by depth (`keyword_at`): the fusion ([`shares`], [`fuse`]) of the keyword leg's
/// first [`Tuning::keyword_candidates`] hits with the other legs, in one order no
/// `limit` changes, then, when `limit` asks for more rows than that holds, the keyword
/// leg's hits [`KEYWORD_TAIL`] deep in its order ([`beyond`]). Both keyword calls have
/// fixed depths because the keyword leg's ranking depends on its depth (it scores the
/// neighbourhoods of more seeds when asked for more hits, so a deeper call can rank a
/// new row above one a shallower call found). So the rows of any call are a prefix of
/// one list, and the first k rows of `limit` n > k are the rows of `limit` k.
#[allow(clippy::too_many_arguments)]
fn hybrid_rows(
    semantic: Vec<Row>,
    literal: Vec<Hit>,
    keyword_at: &dyn Fn(usize) -> Vec<KeywordHit>,
    around: &dyn Fn(&Hit) -> Vec<String>,
    embed: &dyn Fn(&str) -> Vec<f32>,
    tuning: &Tuning,
    boost: f64,
    limit: usize,
) -> Vec<Row> {
    let keyword = keyword_at(tuning.keyword_candidates);
    let best_bm25 = keyword.first().map_or(0.0, |k| k.score);
    let (semantic, literal, keyword) = shares(semantic, literal, keyword, tuning);
    let mut rows = fuse(semantic, literal, keyword, boost);
    if tuning.absorb > 0 {
        rows = absorb(rows, around, tuning.absorb_depth);
    }
    if tuning.session_cap < usize::MAX {
        rows = cap_sessions(rows, tuning.session_cap);
    }
    if tuning.novel_from < rows.len() {
        rows = novel_sessions(rows, tuning.novel_from);
    }
    if tuning.mmr < 1.0 {
        rows = mmr(rows, tuning.mmr, embed);
    }
    if rows.len() < limit {
        let tail = beyond(&rows, &keyword_at(KEYWORD_TAIL), best_bm25);
        rows.extend(tail);
    }
    rows.truncate(limit);
    rows
}

/// The neighbourhood merge ([`ABSORB`]) over the fused `rows` (best first): each row,
/// in order, is absorbed into the first kept row whose neighbourhood holds its shown
/// message — the kept row's window and the messages `around` names (those within
/// [`Tuning::absorb`] messages of its shown message, same conversation) — else kept.
/// The whole fused list is merged before any `limit` cut, so the first rows do not
/// depend on `limit`; an absorbed row leaves its message id, preview, rank and score in
/// the kept row's `absorbed`, and its shares do not add to the kept row's score.
fn absorb(rows: Vec<Row>, around: &dyn Fn(&Hit) -> Vec<String>, depth: usize) -> Vec<Row> {
    let mut kept: Vec<Row> = Vec::new();
    let mut covered: HashMap<Key, usize> = HashMap::new();
    let key = |h: &Hit, m: &str| (h.source.clone(), h.conversation_id.clone(), m.to_owned());
    for (rank, r) in rows.into_iter().enumerate() {
        if let Some(&at) = covered.get(&key(&r.hit, &r.hit.message_id)) {
            // The kept row holds the absorbed row's window too (so the rows continuing
            // the ranking past its candidates do not show it again).
            let held = &mut kept[at].window;
            for m in r.window {
                if !held.contains(&m) {
                    held.push(m);
                }
            }
            if rank < depth {
                kept[at].absorbed.push((r.hit, rank + 1, r.score));
            }
            continue;
        }
        let at = kept.len();
        let near = around(&r.hit);
        for m in r
            .window
            .iter()
            .chain(near.iter())
            .chain(std::iter::once(&r.hit.message_id))
        {
            covered.entry(key(&r.hit, m)).or_insert(at);
        }
        kept.push(r);
    }
    for r in &mut kept {
        r.absorbed.sort_by(|a, b| {
            a.0.created_us
                .cmp(&b.0.created_us)
                .then_with(|| a.0.message_id.cmp(&b.0.message_id))
        });
    }
    kept
}

/// `rows` with at most `cap` rows per conversation before every row of the others: the
/// rows past a conversation's `cap` are moved below the rest, in their order (so the
/// ranking stays complete and independent of `limit`).
fn cap_sessions(rows: Vec<Row>, cap: usize) -> Vec<Row> {
    let mut seen: HashMap<(String, String), usize> = HashMap::new();
    let (mut first, mut later) = (Vec::with_capacity(rows.len()), Vec::new());
    for r in rows {
        let n = seen
            .entry((r.hit.source.clone(), r.hit.conversation_id.clone()))
            .or_insert(0);
        *n += 1;
        if *n <= cap {
            first.push(r);
        } else {
            later.push(r);
        }
    }
    first.extend(later);
    first
}

/// `rows` reordered from row `from` on: each next row is the first remaining one of a
/// conversation no row above shows, else the first remaining one.
fn novel_sessions(rows: Vec<Row>, from: usize) -> Vec<Row> {
    let mut rest: Vec<Option<Row>> = rows.into_iter().map(Some).collect();
    let mut shown: std::collections::HashSet<(String, String)> = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(rest.len());
    let conv = |r: &Row| (r.hit.source.clone(), r.hit.conversation_id.clone());
    for i in 0..rest.len() {
        let pick = if i < from {
            rest.iter().position(Option::is_some)
        } else {
            rest.iter()
                .position(|r| r.as_ref().is_some_and(|r| !shown.contains(&conv(r))))
                .or_else(|| rest.iter().position(Option::is_some))
        };
        let Some(row) = pick.and_then(|at| rest[at].take()) else {
            break;
        };
        shown.insert(conv(&row));
        out.push(row);
    }
    out
}

/// Maximal marginal relevance over `rows` below the literal hits (which stay first):
/// greedily, the row with the highest `lambda` × score / best score − (1 − `lambda`) ×
/// its preview's highest cosine with a row picked before (literal hits included).
fn mmr(rows: Vec<Row>, lambda: f64, embed: &dyn Fn(&str) -> Vec<f32>) -> Vec<Row> {
    let vectors: Vec<Vec<f32>> = rows.iter().map(|r| embed(&r.hit.preview)).collect();
    let best = rows
        .iter()
        .filter(|r| r.literal.is_none())
        .map(|r| r.score)
        .fold(0.0, f64::max);
    let mut left: Vec<usize> = Vec::new();
    let mut order: Vec<usize> = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        if r.literal.is_some() {
            order.push(i);
        } else {
            left.push(i);
        }
    }
    // The highest cosine of each row left with the rows picked so far.
    let mut close: Vec<f64> = vec![f64::NEG_INFINITY; rows.len()];
    let update = |close: &mut Vec<f64>, picked: usize, left: &[usize]| {
        for &j in left {
            let c = f64::from(crate::search::vectors::cosine(
                &vectors[picked],
                &vectors[j],
            ));
            close[j] = close[j].max(c);
        }
    };
    for &p in &order {
        update(&mut close, p, &left);
    }
    while !left.is_empty() {
        let value = |j: usize| {
            let rel = if best > 0.0 {
                rows[j].score / best
            } else {
                0.0
            };
            let sim = if close[j].is_finite() { close[j] } else { 0.0 };
            lambda * rel - (1.0 - lambda) * sim
        };
        let (at, _) = left
            .iter()
            .enumerate()
            .fold((0, f64::NEG_INFINITY), |(ba, bv), (k, &j)| {
                let v = value(j);
                if v > bv {
                    (k, v)
                } else {
                    (ba, bv)
                }
            });
        let picked = left.remove(at);
        order.push(picked);
        update(&mut close, picked, &left);
    }
    let mut slots: Vec<Option<Row>> = rows.into_iter().map(Some).collect();
    order.into_iter().filter_map(|i| slots[i].take()).collect()
}

/// The rows continuing a ranking `rows` past its candidates: the keyword leg's hits
/// `further` (best first) that no row of `rows` holds,
/// each a row of its own in the leg's order with its share over `best` (the leg's
/// best score); no boost reorders them, so a call asking for more rows only adds rows.
fn beyond(rows: &[Row], further: &[KeywordHit], best: f64) -> Vec<Row> {
    further
        .iter()
        .enumerate()
        .filter(|(_, k)| {
            !rows.iter().any(|r| {
                r.hit.source == k.hit.source
                    && r.hit.conversation_id == k.hit.conversation_id
                    && (r.window.contains(&k.hit.message_id)
                        || r.hit.message_id == k.hit.message_id
                        || r.absorbed
                            .iter()
                            .any(|a| a.0.message_id == k.hit.message_id))
            })
        })
        .map(|(i, k)| {
            let share = if best > 0.0 { k.score / best } else { 0.0 };
            let mut r = Row::lone(k.hit.clone(), share, None);
            r.legs.insert(
                "keyword".into(),
                json!({
                    "rank": i + 1, "bm25": k.score, "own": k.own,
                    "neighbours": k.score - k.own, "share": share,
                }),
            );
            r
        })
        .collect()
}

mod archive;
#[cfg(test)]
mod tests;
