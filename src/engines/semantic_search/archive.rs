//! semantic-search answered from the team archive (`--archive`): the semantic leg
//! ranks the archive's units of the model this machine embeds the query with
//! ([`crate::archive::meaning`]); each unit is shown as the local engine shows it
//! ([`super::best_message`]), with its machine. `mode: hybrid` (the default) fuses it,
//! as locally ([`super::hybrid_rows`]: the same depths, shares, temporal routing and
//! order), with the archive's keyword leg ([`crate::archive::keyword`]: BM25 with
//! neighbour documents over the terms push keeps per message, the archive's
//! statistics) and its exact `ILIKE` leg ([`crate::archive::search`]).
//!
//! Rows of the legs are matched by (`source`, `conversation_id`, `message_id`), as
//! locally: two machines holding the same conversation (the same ids) would share a
//! row.

use std::cell::RefCell;
use std::collections::HashMap;

use serde_json::{json, Value};

use super::{best_message, explain_json, row_json, unit_json, Row, Texts};
use crate::archive::keyword::{self, Statistics};
use crate::archive::meaning::{self, Scan, Whose};
use crate::archive::search::Pool;
use crate::archive::ArchiveError;
use crate::engines::{Context, EngineError};
use crate::stores::conversations::embeddings::{Filter, UnitHit, UnitSpec};
use crate::stores::conversations::index::{Hit, KeywordHit, KeywordQuery, Neighbourhood};

/// The arguments of one call, as the engine parsed them.
pub(super) struct Call<'a> {
    pub query: &'a str,
    pub limit: usize,
    pub hybrid: bool,
    pub role: Option<&'a str>,
    pub min_score: f32,
    pub filter: Filter<'a>,
    /// The `project` filter (its trimmed fragment) and the archive-only `machine` and
    /// `user` filters, applied in every leg.
    pub whose: Whose<'a>,
    pub explain: bool,
}

/// Answers `call` from `pool`.
pub(super) fn call(ctx: &Context, pool: &Pool, call: &Call<'_>) -> Result<Value, EngineError> {
    ctx.may_read(crate::stores::Store::Conversations)?;
    let embedder = ctx
        .embedder()
        .map_err(|e| EngineError::Unavailable(format!("embedding unavailable: {e}")))?;
    let models = meaning::models(pool)?;
    let Some(model) = models
        .iter()
        .find(|m| m.model.model == embedder.name() && m.model.dim as usize == embedder.dim())
    else {
        let held: Vec<String> = models
            .iter()
            .map(|m| format!("`{}` ({})", m.model.model, m.model.dim))
            .collect();
        return Err(EngineError::Unavailable(format!(
            "semantic-search: the archive {} holds no vectors of `{}`, the model this machine \
             embeds the query with ({}); {}",
            pool.target().shown(),
            embedder.name(),
            if held.is_empty() {
                "it holds none".to_owned()
            } else {
                format!("it holds {}", held.join(", "))
            },
            "a machine with this model runs `skills archive migrate` then `skills archive push`"
        )));
    };
    let coverage = meaning::coverage(pool, model)?;
    let q = embedder.embed_query(call.query);
    let tuning = super::tuning(embedder.is_deep());
    // Semantic mode ranks the units alone: its first `limit` are the exact ranking's.
    let depth = if call.hybrid {
        tuning.candidates
    } else {
        call.limit
    };
    // The legs run side by side, each on its own pooled connection: the keyword leg
    // at hybrid's first depth and the literal leg on threads, the semantic leg here.
    type KeywordResult = Result<(Vec<KeywordHit>, Vec<(String, Key)>, Statistics), ArchiveError>;
    type LiteralResult = Result<
        (
            Vec<Hit>,
            Vec<(String, (String, String))>,
            Vec<(Key, String)>,
        ),
        EngineError,
    >;
    let stop = ctx.cancel();
    let (semantic, first_keyword, literal): (_, Option<KeywordResult>, Option<LiteralResult>) =
        std::thread::scope(|scope| {
            let keyword = call.hybrid.then(|| {
                scope.spawn(|| {
                    keyword_leg(pool, call, tuning.keyword_candidates, tuning.context, stop)
                })
            });
            let literal = call.hybrid.then(|| {
                scope.spawn(|| {
                    let (mut who, mut machine_of) = (HashMap::new(), HashMap::new());
                    literal_leg(pool, call, tuning.candidates, &mut who, &mut machine_of).map(
                        |hits| {
                            (
                                hits,
                                who.into_iter().collect(),
                                machine_of.into_iter().collect(),
                            )
                        },
                    )
                })
            });
            let semantic = semantic_leg(pool, model, &q, depth, call, coverage.units);
            let joined = |h: std::thread::ScopedJoinHandle<'_, _>| {
                h.join()
                    .unwrap_or_else(|_| Err(ArchiveError::new("a leg's thread panicked")))
            };
            let keyword = keyword.map(joined);
            let literal = literal.map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(EngineError::Query(
                        "the literal leg's thread panicked".into(),
                    ))
                })
            });
            (semantic, keyword, literal)
        });
    let (units, ran, found_messages) = semantic?;
    ctx.cancel().check().map_err(EngineError::Stopped)?;
    // Per machine: its messages as the local engine's texts, its label and user.
    let mut texts: HashMap<String, Texts> = HashMap::new();
    let mut who: HashMap<String, (String, String)> = HashMap::new();
    for m in found_messages {
        who.insert(m.machine.clone(), (m.label.clone(), m.user.clone()));
        // A unit's row shows one of its messages the filters keep.
        if !call.whose.keeps(&m) {
            continue;
        }
        let hit = m.hit;
        let key = (
            hit.source.clone(),
            hit.conversation_id.clone(),
            hit.message_id.clone(),
        );
        texts
            .entry(m.machine)
            .or_insert_with(|| Texts(HashMap::new()))
            .0
            .insert(key, (hit, m.folded));
    }
    let empty = Texts(HashMap::new());
    let mut rows: Vec<Row> = Vec::with_capacity(units.len());
    // The machine of each row's message (see the module docs).
    let mut machine_of: HashMap<Key, String> = HashMap::new();
    for u in units {
        let hit = UnitHit {
            score: u.score,
            source: u.source,
            conversation_id: u.conversation_id,
            messages: u.messages,
        };
        let t = texts.get(&u.machine).unwrap_or(&empty);
        if let Some(row) = best_message(&hit, t, &call.filter, call.role, &q, &embedder) {
            for m in &row.window {
                machine_of.insert(
                    (
                        row.hit.source.clone(),
                        row.hit.conversation_id.clone(),
                        m.clone(),
                    ),
                    u.machine.clone(),
                );
            }
            rows.push(row);
        }
    }
    let mut statistics = None;
    if call.hybrid {
        let (literal, literal_who, literal_machines) =
            literal.unwrap_or_else(|| Ok(Default::default()))?;
        for (m, labels) in literal_who {
            who.entry(m).or_insert(labels);
        }
        for (key, m) in literal_machines {
            machine_of.entry(key).or_insert(m);
        }
        let failed: RefCell<Option<ArchiveError>> = RefCell::new(None);
        let found: RefCell<Vec<(String, Key)>> = RefCell::new(Vec::new());
        let stats: RefCell<Option<Statistics>> = RefCell::new(None);
        // The first depth's answer was read beside the other legs.
        let first = RefCell::new(first_keyword);
        let keyword_at = |depth: usize| {
            let answer = match first.borrow_mut().take() {
                Some(a) if depth == tuning.keyword_candidates => a,
                _ => keyword_leg(pool, call, depth, tuning.context, ctx.cancel()),
            };
            match answer {
                Ok((hits, machines, s)) => {
                    found.borrow_mut().extend(machines);
                    stats.borrow_mut().get_or_insert(s);
                    hits
                }
                Err(e) => {
                    failed.borrow_mut().get_or_insert(e);
                    Vec::new()
                }
            }
        };
        let boost = if crate::engines::temporal::is_temporal_question(call.query) {
            tuning.temporal_boost
        } else {
            0.0
        };
        // The harness-only diversity variants (neighbourhood merge, MMR) are off in
        // every default tuning; the archive gives them no neighbours or vectors.
        let no_neighbours = |_: &Hit| Vec::new();
        let no_vector = |_: &str| Vec::new();
        rows = super::hybrid_rows(
            rows,
            literal,
            &keyword_at,
            &no_neighbours,
            &no_vector,
            &tuning,
            boost,
            call.limit,
        );
        if let Some(e) = failed.into_inner() {
            return Err(EngineError::from(e));
        }
        for (m, key) in found.into_inner() {
            machine_of.entry(key).or_insert(m);
        }
        statistics = stats.into_inner();
    } else {
        for (i, r) in rows.iter_mut().enumerate() {
            r.legs
                .insert("semantic".into(), json!({"rank": i + 1, "cosine": r.score}));
        }
    }
    if !who.is_empty() || !machine_of.is_empty() {
        let missing: Vec<String> = machine_of
            .values()
            .filter(|m| !who.contains_key(*m))
            .cloned()
            .collect();
        for (m, label, user) in machines(pool, &missing)? {
            who.insert(m, (label, user));
        }
    }
    let out: Vec<Value> = rows
        .iter()
        .map(|r| {
            let key = (
                r.hit.source.clone(),
                r.hit.conversation_id.clone(),
                r.hit.message_id.clone(),
            );
            let machine = machine_of.get(&key).cloned().unwrap_or_default();
            let mut row = row_json(r);
            let (label, user) = who.get(machine.as_str()).cloned().unwrap_or_default();
            row["machine"] = json!(label);
            row["machine_id"] = json!(machine);
            row["user"] = json!(user);
            row["cites"]["machine_id"] = json!(machine);
            if call.explain {
                row["explain"] = json!({"legs": r.legs});
            }
            row
        })
        .collect();
    // The unit the model's units were cut with (the first, should machines differ).
    let unit = coverage
        .unit_specs
        .first()
        .and_then(|u| serde_json::from_str::<UnitSpec>(u).ok())
        .unwrap_or(UnitSpec::DEFAULT);
    let unit = unit_json(unit);
    let mut result = json!({
        "query": call.query,
        "mode": if call.hybrid { "hybrid" } else { "semantic" },
        "limit": call.limit,
        "count": out.len(),
        "model": model.model.model,
        "unit": unit,
        "rows": out,
        "project": call.whose.project,
    });
    if coverage.conversations_without > 0 {
        result["note"] = json!(format!(
            "{} of the archive's {} conversations ({} messages) have no vectors of `{}` \
             (pushed without embeddings, or embedded with another model): they are not \
             ranked",
            coverage.conversations_without,
            coverage.conversations + coverage.conversations_without,
            coverage.messages_without,
            model.model.model
        ));
    }
    if call.explain {
        result["explain"] = explain_json(call.hybrid, &tuning, call.query);
        result["explain"]["archive"] = json!({
            "scan": ran,
            "units": coverage.units,
            "keyword_statistics": statistics,
        });
    }
    Ok(result)
}

/// The semantic leg: the `depth` nearest units of `model` to `q` with the call's
/// filters, how the search ran, and the units' messages.
fn semantic_leg(
    pool: &Pool,
    model: &crate::archive::schema::RegisteredModel,
    q: &[f32],
    depth: usize,
    call: &Call<'_>,
    units: i64,
) -> Result<
    (
        Vec<meaning::FoundUnit>,
        meaning::Ran,
        Vec<meaning::ArchiveMessage>,
    ),
    ArchiveError,
> {
    let (found, ran) = meaning::nearest_units(
        pool,
        model,
        q,
        depth,
        &call.filter,
        &call.whose,
        call.min_score,
        Scan::Auto,
        units,
    )?;
    let keys: Vec<meaning::MessageKey> = found
        .iter()
        .flat_map(|u| {
            u.messages.iter().map(|m| {
                (
                    u.machine.clone(),
                    u.source.clone(),
                    u.conversation_id.clone(),
                    m.message_id.clone(),
                    m.created_us,
                )
            })
        })
        .collect();
    let messages = meaning::messages(pool, &keys)?;
    Ok((found, ran, messages))
}

/// A message's key across the legs: (`source`, `conversation_id`, `message_id`).
type Key = (String, String, String);

/// The label and user of each of `machines`.
fn machines(
    pool: &Pool,
    machines: &[String],
) -> Result<Vec<(String, String, String)>, ArchiveError> {
    if machines.is_empty() {
        return Ok(Vec::new());
    }
    let target = pool.target().clone();
    pool.with(|c| {
        Ok(c.query(
            &format!(
                "SELECT machine, label, user_name FROM {}.machines WHERE machine = ANY($1)",
                crate::archive::schema::SCHEMA
            ),
            &[&machines],
        )
        .map_err(|e| target.error("reading the machines", &e))?
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect())
    })
}

/// The exact `ILIKE` leg on the archive: search-conversations' rows for the query as
/// its term, newest first, with every filter, at most `limit` (as the local leg: the
/// role in the search, the other filters over up to 2,000 rows when one is set). Each
/// row's machine goes into `machine_of`, its label and user into `who`.
fn literal_leg(
    pool: &Pool,
    call: &Call<'_>,
    limit: usize,
    who: &mut HashMap<String, (String, String)>,
    machine_of: &mut HashMap<Key, String>,
) -> Result<Vec<Hit>, EngineError> {
    crate::engines::search_conversations::check_wildcards("query", call.query)?;
    let f = &call.filter;
    let extra = f.source.is_some()
        || f.conversation_id.is_some()
        || f.since_us.is_some()
        || f.until_us.is_some();
    let fetch = if extra { 2000.max(limit) } else { limit };
    let q = crate::archive::search::Query {
        term: Some(call.query),
        role: call.role,
        project: call.whose.project,
        machine: call.whose.machine,
        user: call.whose.user,
        limit: i64::try_from(fetch).unwrap_or(2000),
    };
    let rows = crate::archive::search::search(pool, &q)?;
    let mut out = Vec::new();
    for r in rows {
        let text = |k: &str| r[k].as_str().unwrap_or("").to_owned();
        let created_us = chrono::NaiveDateTime::parse_from_str(
            r["created"].as_str().unwrap_or(""),
            "%Y-%m-%dT%H:%M:%S%.6fZ",
        )
        .map(|t| t.and_utc().timestamp_micros())
        .unwrap_or(0);
        let hit = Hit {
            created_us,
            source: text("source"),
            role: text("role"),
            conversation_id: text("conversation_id"),
            message_id: text("message_id"),
            project: r["project"].as_str().map(str::to_owned),
            preview: text("preview"),
        };
        if !super::hit_passes(f, &hit) {
            continue;
        }
        let machine = text("machine_id");
        who.entry(machine.clone())
            .or_insert_with(|| (text("machine"), text("user")));
        machine_of
            .entry((
                hit.source.clone(),
                hit.conversation_id.clone(),
                hit.message_id.clone(),
            ))
            .or_insert(machine);
        out.push(hit);
        if out.len() == limit {
            break;
        }
    }
    Ok(out)
}

/// The archive's keyword leg ([`keyword::search`]) for the query's terms, `depth`
/// deep, each hit read with its preview: the hits, their machines by key, and the
/// statistics they were scored with.
#[allow(clippy::type_complexity)]
fn keyword_leg(
    pool: &Pool,
    call: &Call<'_>,
    depth: usize,
    context: Option<Neighbourhood>,
    stop: &crate::cancel::Cancel,
) -> Result<(Vec<KeywordHit>, Vec<(String, Key)>, Statistics), ArchiveError> {
    let terms = super::query_terms(call.query);
    if terms.is_empty() {
        return Ok((Vec::new(), Vec::new(), Statistics::default()));
    }
    let q = KeywordQuery {
        terms: &terms,
        role: call.role,
        exclude_injected: true,
        source: call.filter.source,
        conversation_id: call.filter.conversation_id,
        since_us: call.filter.since_us,
        until_us: call.filter.until_us,
        limit: depth,
        stop,
    };
    let whose = call.whose;
    let keep = move |keys: &[meaning::MessageKey]| meaning::kept(pool, keys, &whose);
    let (found, stats) = keyword::search_kept(
        pool,
        &q,
        context,
        (!whose.is_empty()).then_some(&keep as keyword::Keep<'_>),
    )?;
    let keys: Vec<meaning::MessageKey> = found
        .iter()
        .map(|f| {
            (
                f.machine.clone(),
                f.source.clone(),
                f.conversation_id.clone(),
                f.message_id.clone(),
                f.created_us,
            )
        })
        .collect();
    let mut hits: HashMap<(String, String, String, String), Hit> = meaning::messages(pool, &keys)?
        .into_iter()
        .map(|m| {
            let h = m.hit;
            (
                (
                    m.machine,
                    h.source.clone(),
                    h.conversation_id.clone(),
                    h.message_id.clone(),
                ),
                h,
            )
        })
        .collect();
    let mut out = Vec::with_capacity(found.len());
    let mut machines = Vec::with_capacity(found.len());
    for (f, (machine, source, conversation, message, _)) in found.iter().zip(keys) {
        let key = (machine, source, conversation, message);
        if let Some(hit) = hits.remove(&key) {
            machines.push((key.0, (key.1, key.2, key.3)));
            out.push(KeywordHit {
                score: f.score,
                own: f.own,
                hit,
            });
        }
    }
    Ok((out, machines, stats))
}
