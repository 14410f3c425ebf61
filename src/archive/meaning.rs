//! Meaning on the team archive: the vectors pushed beside the rows ([`super::push`]
//! sends them, [`super::schema`] holds their tables) and semantic-search's nearest
//! units answered from pgvector ([`nearest_units`]).
//!
//! ## Same vectors, same scores
//!
//! A unit's vector is pushed as the local store holds it — its 8-bit code (`scale`,
//! `codes`), never recomputed — and as its dequantized `v̂ = scale · codes` in
//! `halfvec(dim)` for pgvector's ordering and HNSW index. The archive's order is only
//! a candidate order: every candidate is scored again here exactly as the local search
//! scores it ([`code_score`]: the same `f32` sum over the same code), so a unit has the
//! same score to the bit on both sides.
//!
//! ## Exact and approximate
//!
//! - [`Scan::Exact`]: a sequential scan ordered by the `halfvec` inner product, in
//!   rounds. `halfvec` rounds `v̂` and the query to 11-bit mantissas, so its score
//!   differs from the exact one by at most [`HALF_SLACK`] (for unit vectors); once the
//!   n-th best exact score of the candidates read is at least the last candidate's
//!   `halfvec` score plus that slack, no unit not read can beat it and the ranking is
//!   the exact one over the stored vectors — the local exact pass's. Otherwise the
//!   round is doubled.
//! - [`Scan::Hnsw`]: the HNSW index with `hnsw.ef_search` candidates (iterative scans
//!   on, `relaxed_order`, so filters still find their rows), re-scored exactly:
//!   approximate.
//! - [`Scan::Auto`] (what the engine uses): exact below
//!   [`crate::stores::conversations::embeddings::BITS_MIN_UNITS`] units of the model —
//!   where the local search is exact too — HNSW from there.
//!
//! Ties (equal exact scores) are broken by machine, source, conversation and unit
//! number: a single machine's store embedded in one pass ranks ties the same way
//! locally (segment order, then unit order).

use std::error::Error;

use bytes::{BufMut, BytesMut};
use postgres::types::{IsNull, ToSql, Type};

use super::schema::{RegisteredModel, SCHEMA};
use super::search::GENERIC;
use super::ArchiveError;
use crate::stores::conversations::embeddings::{code_score, role, Filter, UnitMessage};
use crate::stores::conversations::index::Hit;

/// A vector as pgvector's `halfvec` (binary form: `int16` dimension, `int16` 0, then
/// each value as an IEEE half, big-endian).
#[derive(Debug, Clone, PartialEq)]
pub struct HalfVec(pub Vec<half::f16>);

impl HalfVec {
    /// `v` rounded to halves (to nearest).
    pub fn of(v: &[f32]) -> Self {
        Self(v.iter().map(|&x| half::f16::from_f32(x)).collect())
    }

    /// The dequantized 8-bit code `scale · codes`, rounded to halves.
    pub fn of_code(scale: f32, codes: &[i8]) -> Self {
        Self(
            codes
                .iter()
                .map(|&c| half::f16::from_f32(scale * f32::from(c)))
                .collect(),
        )
    }
}

impl ToSql for HalfVec {
    fn to_sql(&self, _: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        let dim = i16::try_from(self.0.len()).map_err(|_| "halfvec: too many dimensions")?;
        out.put_i16(dim);
        out.put_i16(0);
        for x in &self.0 {
            out.put_u16(x.to_bits());
        }
        Ok(IsNull::No)
    }

    fn accepts(ty: &Type) -> bool {
        ty.name() == "halfvec"
    }

    postgres::types::to_sql_checked!();
}

/// The `halfvec` type of the server (an extension's type has no fixed id), as a
/// binary `COPY` needs it.
///
/// # Errors
/// [`postgres::Error`] when the server has no `halfvec` (no pgvector).
pub fn halfvec_type(client: &mut impl postgres::GenericClient) -> Result<Type, postgres::Error> {
    let st = client.prepare("SELECT $1::halfvec")?;
    Ok(st.params()[0].clone())
}

/// Largest difference between a unit's exact score and pgvector's `halfvec` inner
/// product of the same query and unit (both unit vectors, up to the 8-bit code's
/// norm): each product is off by at most `2⁻¹⁰` of itself from the two roundings to
/// half, their sum of magnitudes is at most `‖q‖·‖v̂‖ ≤ 1.02`, and the `f32` sums on
/// both sides add well under `10⁻⁴` at 4,000 dimensions; `2⁻⁸` leaves room beyond
/// that.
pub const HALF_SLACK: f64 = 1.0 / 256.0;

/// How [`nearest_units`] finds the nearest units (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scan {
    /// Exact below [`crate::stores::conversations::embeddings::BITS_MIN_UNITS`] units
    /// of the model, HNSW with [`HNSW_CANDIDATES`] from there.
    Auto,
    /// A sequential scan, proven exact.
    Exact,
    /// The HNSW index, `ef_search` candidates re-scored exactly (at most 1000, pgvector's
    /// limit; at least the rows asked for).
    Hnsw {
        /// `hnsw.ef_search`: candidates the index returns.
        ef_search: usize,
    },
}

/// [`Scan::Auto`]'s HNSW candidates per result asked (at least [`HNSW_FLOOR`], at
/// most 1000, pgvector's limit).
pub const HNSW_CANDIDATES: usize = 4;
/// [`Scan::Auto`]'s fewest HNSW candidates (`hnsw.ef_search`): measured on a 100,000
/// unit store (docs/performance.md, "Semantic search on the team archive"), recall@15
/// against the exact scan is 0.895 at 100 and 0.968 at 400 (p50 1.7 and 5.8 ms).
pub const HNSW_FLOOR: usize = 400;

/// One unit found in the archive.
#[derive(Debug, Clone, PartialEq)]
pub struct FoundUnit {
    /// The exact score ([`code_score`]), as the local search gives the same code.
    pub score: f32,
    /// The machine id that pushed it.
    pub machine: String,
    /// `source`.
    pub source: String,
    /// `conversation_id`.
    pub conversation_id: String,
    /// Its number in its conversation (0-based, conversation order).
    pub unit: i32,
    /// Its messages, in conversation order.
    pub messages: Vec<UnitMessage>,
}

/// How many of the archive's conversations a model's vectors cover.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Coverage {
    /// Units of the model.
    pub units: i64,
    /// Conversations with units of the model.
    pub conversations: i64,
    /// Conversations without (pushed without embeddings, or with another model).
    pub conversations_without: i64,
    /// Their messages.
    pub messages_without: i64,
    /// The unit specs (JSON) the model's units were cut with, one per kind seen.
    pub unit_specs: Vec<String>,
}

/// How the search ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Ran {
    /// The exact scan, in `rounds` rounds.
    Exact {
        /// Scans made until the ranking was proven.
        rounds: usize,
    },
    /// The HNSW index with `ef_search` candidates.
    Hnsw {
        /// Candidates asked of the index.
        ef_search: usize,
    },
}

fn archive_err(pool: &super::search::Pool, what: &str) -> impl Fn(postgres::Error) -> ArchiveError {
    let target = pool.target().clone();
    let what = what.to_owned();
    move |e| target.error(&what, &e)
}

/// The registered models of the archive (none before `skills archive migrate`
/// registered one; an error when the schema is not this build's).
///
/// # Errors
/// [`ArchiveError`] when the archive cannot be read.
pub fn models(pool: &super::search::Pool) -> Result<Vec<RegisteredModel>, ArchiveError> {
    let err = archive_err(pool, "reading the vector models");
    pool.with(|c| super::schema::registered_models(c).map_err(&err))
}

/// [`Coverage`] of `model`.
///
/// # Errors
/// [`ArchiveError`] when the archive cannot be read.
pub fn coverage(
    pool: &super::search::Pool,
    model: &RegisteredModel,
) -> Result<Coverage, ArchiveError> {
    let err = archive_err(pool, "reading the vectors' coverage");
    pool.with(|c| {
        let r = c
            .query_one(
                &format!(
                    "SELECT coalesce(sum(units) FILTER (WHERE vector_model = $1), 0)::bigint,
                            count(*) FILTER (WHERE vector_model = $1),
                            count(*) FILTER (WHERE vector_model IS DISTINCT FROM $1),
                            coalesce(sum(messages) FILTER (WHERE vector_model IS DISTINCT FROM $1), 0)::bigint,
                            coalesce(array_agg(DISTINCT vector_unit) FILTER (WHERE vector_model = $1), '{{}}')
                     FROM {SCHEMA}.conversations"
                ),
                &[&model.model.model],
            )
            .map_err(&err)?;
        Ok(Coverage {
            units: r.get(0),
            conversations: r.get(1),
            conversations_without: r.get(2),
            messages_without: r.get(3),
            unit_specs: r.get(4),
        })
    })
}

/// The archive-side filters of a conversation search: the `project` filter (the
/// units hold no project: a unit is kept when one of its messages matches, as the
/// local row mask) and the archive-only `machine` and `user` filters. Each also keeps
/// only matching messages for the row shown ([`Whose::keeps`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Whose<'a> {
    /// A case-insensitive literal part of the message's project path.
    pub project: Option<&'a str>,
    /// The machine that pushed it: its id or its host label.
    pub machine: Option<&'a str>,
    /// The user recorded on the message.
    pub user: Option<&'a str>,
}

impl Whose<'_> {
    /// True when no filter is set.
    pub fn is_empty(&self) -> bool {
        self.project.is_none() && self.machine.is_none() && self.user.is_none()
    }

    /// Whether `m` passes every filter (the project as
    /// [`crate::stores::conversations::project::Project::matches`]).
    pub fn keeps(&self, m: &ArchiveMessage) -> bool {
        self.project.is_none_or(|p| {
            crate::stores::conversations::project::Project::from_arg(Some(p))
                .is_none_or(|p| p.matches(m.hit.project.as_deref()))
        }) && self.machine.is_none_or(|x| x == m.machine || x == m.label)
            && self.user.is_none_or(|u| u == m.user)
    }
}

/// The keys of `keys` whose messages pass `whose` ([`Whose::keeps`]), as (machine,
/// source, conversation_id, message_id); every key when `whose` is empty.
///
/// # Errors
/// [`ArchiveError`] when the archive cannot be read.
pub fn kept(
    pool: &super::search::Pool,
    keys: &[MessageKey],
    whose: &Whose<'_>,
) -> Result<std::collections::HashSet<(String, String, String, String)>, ArchiveError> {
    if whose.is_empty() {
        return Ok(keys
            .iter()
            .map(|k| (k.0.clone(), k.1.clone(), k.2.clone(), k.3.clone()))
            .collect());
    }
    Ok(messages(pool, keys)?
        .into_iter()
        .filter(|m| whose.keeps(m))
        .map(|m| {
            (
                m.machine,
                m.hit.source,
                m.hit.conversation_id,
                m.hit.message_id,
            )
        })
        .collect())
}

/// A candidate as read: its `halfvec` score, then the unit.
type Candidate = (f64, FoundUnit);

/// The `n` units of `model` with the largest exact scores against the unit query `q`
/// among those `filter` keeps, with `score ≥ min_score`, best first (ties: machine,
/// source, conversation, unit), found as `scan` says; with how it ran. `units` (the
/// model's unit count, [`Coverage::units`]) chooses for [`Scan::Auto`].
///
/// # Errors
/// [`ArchiveError`] when the archive cannot be read, `q` is not of the model's
/// dimension, or `filter` has a `project` scope (the local form: give the project in
/// `whose`, whose filters keep a unit when one of its messages passes them).
#[allow(clippy::too_many_arguments)]
pub fn nearest_units(
    pool: &super::search::Pool,
    model: &RegisteredModel,
    q: &[f32],
    n: usize,
    filter: &Filter<'_>,
    whose: &Whose<'_>,
    min_score: f32,
    scan: Scan,
    units: i64,
) -> Result<(Vec<FoundUnit>, Ran), ArchiveError> {
    if q.len() != model.model.dim as usize {
        return Err(ArchiveError::new(format!(
            "the query has {} dimensions, model `{}` {}",
            q.len(),
            model.model.model,
            model.model.dim
        )));
    }
    if filter.project.is_some() {
        return Err(ArchiveError::new(
            "the archive's units hold no project: give it as `Whose::project`",
        ));
    }
    if n == 0 {
        return Ok((Vec::new(), Ran::Exact { rounds: 0 }));
    }
    let min_units = crate::stores::conversations::embeddings::BITS_MIN_UNITS;
    let scan = match scan {
        Scan::Auto if u64::try_from(units).unwrap_or(0) < min_units => Scan::Exact,
        Scan::Auto => Scan::Hnsw {
            ef_search: n.saturating_mul(HNSW_CANDIDATES).max(HNSW_FLOOR),
        },
        other => other,
    };
    let err = archive_err(pool, "semantic-search");
    let half = HalfVec::of(q);
    let (mut where_sql, mut params) = (String::new(), Vec::<Box<dyn ToSql + Sync>>::new());
    params.push(Box::new(half));
    let mut param = |v: Box<dyn ToSql + Sync>, sql: &str| {
        params.push(v);
        where_sql.push_str(&format!(
            " AND {}",
            sql.replace('?', &format!("${}", params.len()))
        ));
    };
    if filter.roles != 0 {
        param(Box::new(i16::from(filter.roles)), "(roles & ?) <> 0");
    }
    if let Some(s) = filter.source {
        param(Box::new(s.to_owned()), "source = ?");
    }
    if let Some(c) = filter.conversation_id {
        param(Box::new(c.to_owned()), "conversation_id = ?");
    }
    if let Some(s) = filter.since_us {
        param(Box::new(s), "last_us >= ?");
    }
    if let Some(u) = filter.until_us {
        param(Box::new(u), "first_us < ?");
    }
    if let Some(m) = whose.machine {
        param(
            Box::new(m.to_owned()),
            &format!("(u.machine = ? OR u.machine IN (SELECT machine FROM {SCHEMA}.machines WHERE label = ?))"),
        );
    }
    if whose.project.is_some() || whose.user.is_some() {
        // A unit is kept when one of its messages passes (the local row mask).
        let mut cond = format!(
            "EXISTS (SELECT 1 FROM {SCHEMA}.messages x WHERE x.machine = u.machine \
             AND x.source = u.source AND x.conversation_id = u.conversation_id \
             AND x.message_id = ANY(u.message_ids)"
        );
        if let Some(p) = whose.project {
            params.push(Box::new(super::search::project_pattern(p)));
            cond.push_str(&format!(" AND x.project_folded LIKE ${}", params.len()));
        }
        if let Some(user) = whose.user {
            params.push(Box::new(user.to_owned()));
            cond.push_str(&format!(" AND x.user_name = ${}", params.len()));
        }
        cond.push(')');
        where_sql.push_str(" AND ");
        where_sql.push_str(&cond);
    }
    let sql = |k: usize| {
        format!(
            "SELECT machine, source, conversation_id, unit, message_ids, message_created,
                    message_roles, scale, codes, -(embedding <#> $1)
             FROM {} u WHERE true{where_sql}
             ORDER BY embedding <#> $1 LIMIT {k}",
            model.units_table()
        )
    };
    pool.with(|client| {
        let mut tx = client.transaction().map_err(&err)?;
        tx.batch_execute(&format!(
            "SET TRANSACTION READ ONLY; SET LOCAL statement_timeout = {}",
            super::search::DEADLINE.as_millis()
        ))
        .map_err(&err)?;
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|b| b.as_ref() as _).collect();
        let read = |tx: &mut postgres::Transaction<'_>,
                    k: usize|
         -> Result<Vec<Candidate>, ArchiveError> {
            let rows = tx.query(&sql(k), &refs).map_err(&err)?;
            rows.iter()
                .map(|r| {
                    let scale: f32 = r.get(7);
                    let codes: Vec<u8> = r.get(8);
                    let codes: &[i8] = bytemuck::cast_slice(&codes);
                    let ids: Vec<String> = r.get(4);
                    let created: Vec<i64> = r.get(5);
                    let roles: Vec<i16> = r.get(6);
                    let messages = ids
                        .into_iter()
                        .zip(created)
                        .zip(roles)
                        .map(|((message_id, created_us), bit)| UnitMessage {
                            message_id,
                            created_us,
                            role: role::name(u8::try_from(bit).unwrap_or(role::OTHER)),
                        })
                        .collect();
                    Ok((
                        r.get::<_, f64>(9),
                        FoundUnit {
                            score: code_score(q, scale, codes),
                            machine: r.get(0),
                            source: r.get(1),
                            conversation_id: r.get(2),
                            unit: r.get(3),
                            messages,
                        },
                    ))
                })
                .collect()
        };
        let (found, ran) = match scan {
            Scan::Hnsw { ef_search } => {
                let k = ef_search.clamp(n.min(1000), 1000);
                tx.batch_execute(&format!(
                    "SET LOCAL hnsw.ef_search = {k}; SET LOCAL hnsw.iterative_scan = relaxed_order"
                ))
                .map_err(&err)?;
                (
                    ranked(read(&mut tx, k)?, n, min_score),
                    Ran::Hnsw { ef_search: k },
                )
            }
            Scan::Exact | Scan::Auto => {
                tx.batch_execute(
                    "SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off",
                )
                .map_err(&err)?;
                let mut k = n.saturating_mul(2).saturating_add(32);
                let mut rounds = 0;
                loop {
                    rounds += 1;
                    let got = read(&mut tx, k)?;
                    let complete = got.len() < k;
                    let last_half = got.last().map_or(f64::NEG_INFINITY, |c| c.0);
                    let top = ranked(got, n, min_score);
                    // Every unit not read has a halfvec score ≤ last_half, so an exact
                    // score ≤ last_half + slack (scaled by the query's norm).
                    let bound = last_half + HALF_SLACK * norm(q);
                    let proven = complete
                        || bound < f64::from(min_score)
                        || (top.len() == n && f64::from(top[n - 1].score) >= bound);
                    if proven {
                        break (top, Ran::Exact { rounds });
                    }
                    k = k.saturating_mul(4);
                }
            }
        };
        tx.commit().map_err(&err)?;
        Ok((found, ran))
    })
}

fn norm(q: &[f32]) -> f64 {
    q.iter()
        .map(|&x| f64::from(x) * f64::from(x))
        .sum::<f64>()
        .sqrt()
        .max(1.0)
}

/// The `n` best of `candidates` by exact score with `score ≥ min_score`, best first
/// (ties: machine, source, conversation, unit).
fn ranked(candidates: Vec<Candidate>, n: usize, min_score: f32) -> Vec<FoundUnit> {
    let mut units: Vec<FoundUnit> = candidates
        .into_iter()
        .map(|(_, u)| u)
        .filter(|u| u.score >= min_score)
        .collect();
    units.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.machine.cmp(&b.machine))
            .then_with(|| a.source.cmp(&b.source))
            .then_with(|| a.conversation_id.cmp(&b.conversation_id))
            .then(a.unit.cmp(&b.unit))
    });
    units.truncate(n);
    units
}

/// One message of the archive, as semantic-search shows a unit by it.
#[derive(Debug, Clone, PartialEq)]
pub struct ArchiveMessage {
    /// The machine id that pushed it.
    pub machine: String,
    /// Its host label.
    pub label: String,
    /// The user recorded on it.
    pub user: String,
    /// Its columns as search-conversations shows them (preview: the first 200
    /// characters).
    pub hit: Hit,
    /// Its text lowercased as DuckDB's `lower()` does.
    pub folded: String,
}

/// A message's key in the archive: machine, source, conversation_id, message_id, and
/// its `created` (µs since the epoch), which names its monthly partition.
pub type MessageKey = (String, String, String, String, i64);

/// The columns [`messages`] reads (`m`: `messages`, `k`: `machines`).
const MESSAGE_COLUMNS: &str = "m.machine, coalesce(k.label, m.machine), m.user_name, m.created,
    m.source, m.role, m.conversation_id, m.message_id, m.project,
    left(m.content, 200), m.content_folded, m.content_raw";

/// The messages `keys` name, in no order (a key naming no message gives none).
///
/// Read by key and `created`: one prepared statement with a generic plan ([`GENERIC`]),
/// a nested loop whose index probe on `created` touches only the key's month (run-time
/// partition pruning). A key whose `created` is not its message's (none should be: push
/// writes both from the same column) is looked for again in every partition by its
/// conversation.
///
/// # Errors
/// [`ArchiveError`] when the archive cannot be read.
pub fn messages(
    pool: &super::search::Pool,
    keys: &[MessageKey],
) -> Result<Vec<ArchiveMessage>, ArchiveError> {
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let err = archive_err(pool, "reading the units' messages");
    let by_created = format!(
        "SELECT {MESSAGE_COLUMNS}
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamp[])
              AS s(machine, source, conversation_id, message_id, created)
         JOIN {SCHEMA}.messages m ON m.created = s.created AND m.machine = s.machine
              AND m.source = s.source AND m.conversation_id = s.conversation_id
              AND m.message_id = s.message_id
         LEFT JOIN {SCHEMA}.machines k ON k.machine = m.machine"
    );
    let by_conversation = format!(
        "SELECT {MESSAGE_COLUMNS}
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[])
              AS s(machine, source, conversation_id, message_id)
         JOIN {SCHEMA}.messages m ON m.machine = s.machine AND m.source = s.source
              AND m.conversation_id = s.conversation_id AND m.message_id = s.message_id
         LEFT JOIN {SCHEMA}.machines k ON k.machine = m.machine"
    );
    fn columns<'k>(keys: &[&'k MessageKey]) -> ([Vec<&'k str>; 4], Vec<chrono::NaiveDateTime>) {
        let mut cols: [Vec<&str>; 4] = Default::default();
        let mut created = Vec::with_capacity(keys.len());
        for k in keys {
            cols[0].push(k.0.as_str());
            cols[1].push(k.1.as_str());
            cols[2].push(k.2.as_str());
            cols[3].push(k.3.as_str());
            created.push(
                chrono::DateTime::from_timestamp_micros(k.4)
                    .map_or(chrono::NaiveDateTime::MIN, |t| t.naive_utc()),
            );
        }
        (cols, created)
    }
    pool.with_prepared(|p| {
        let all: Vec<&MessageKey> = keys.iter().collect();
        let (cols, created) = columns(&all);
        let st = p.statement(&by_created).map_err(&err)?;
        let mut tx = p.client.transaction().map_err(&err)?;
        tx.batch_execute(GENERIC).map_err(&err)?;
        let mut rows = tx
            .query(&st, &[&cols[0], &cols[1], &cols[2], &cols[3], &created])
            .map_err(&err)?;
        if rows.len() < keys.len() {
            type Found = (String, String, String, String);
            let found: std::collections::HashSet<Found> = rows
                .iter()
                .map(|r| (r.get(0), r.get(4), r.get(6), r.get(7)))
                .collect();
            let missing: Vec<&MessageKey> = keys
                .iter()
                .filter(|k| !found.contains(&(k.0.clone(), k.1.clone(), k.2.clone(), k.3.clone())))
                .collect();
            let (cols, _) = columns(&missing);
            let more = tx
                .query(&by_conversation, &[&cols[0], &cols[1], &cols[2], &cols[3]])
                .map_err(&err)?;
            rows.extend(more);
        }
        tx.commit().map_err(&err)?;
        Ok(rows
            .iter()
            .map(|r| {
                let raw: Option<Vec<u8>> = r.get(11);
                let raw = raw.map(|b| String::from_utf8_lossy(&b).into_owned());
                let created: chrono::NaiveDateTime = r.get(3);
                let (preview, folded) = match &raw {
                    Some(text) => {
                        let mut f = Vec::with_capacity(text.len());
                        crate::search::scan::fold(text, &mut f);
                        (
                            text.chars().take(200).collect(),
                            String::from_utf8_lossy(&f).into_owned(),
                        )
                    }
                    None => (r.get(9), r.get(10)),
                };
                ArchiveMessage {
                    machine: r.get(0),
                    label: r.get(1),
                    user: r.get(2),
                    hit: Hit {
                        created_us: created.and_utc().timestamp_micros(),
                        source: r.get(4),
                        role: r.get(5),
                        conversation_id: r.get(6),
                        message_id: r.get(7),
                        project: r.get(8),
                        preview,
                    },
                    folded,
                }
            })
            .collect())
    })
}

/// The units of `model` the archive holds, as `(machine, source, conversation_id,
/// unit)` in that order — for tests and benchmarks.
///
/// # Errors
/// [`ArchiveError`] when the archive cannot be read.
pub fn unit_keys(
    pool: &super::search::Pool,
    model: &RegisteredModel,
) -> Result<Vec<(String, String, String, i32)>, ArchiveError> {
    let err = archive_err(pool, "reading the units");
    pool.with(|c| {
        Ok(c.query(
            &format!(
                "SELECT machine, source, conversation_id, unit FROM {} \
                 ORDER BY machine, source, conversation_id, unit",
                model.units_table()
            ),
            &[],
        )
        .map_err(&err)?
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
        .collect())
    })
}
