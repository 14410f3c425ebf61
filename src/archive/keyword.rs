//! semantic-search's keyword leg on the team archive: BM25 over the stemmed terms push
//! keeps per message ([`super::schema::MESSAGE_TERMS`]), scored here exactly as the
//! local leg scores its postings ([`crate::search::postings`]: the same `idf`,
//! `term_score`, neighbour documents, seeds and ties), so the same rows with the same
//! statistics get the same scores to the bit.
//!
//! ## Statistics
//!
//! `N` (messages), the mean length and each term's document frequency are the
//! archive's: every message every machine pushed ([`super::schema::KEYWORD_DELTAS`],
//! [`super::schema::KEYWORD_TOTALS`]), as the local leg's are every message of the
//! local store. With one machine's store pushed whole they are the local ones; with
//! several machines a term's idf is the team's (a word common on one machine is rarer
//! in the team). Filters (role, source, conversation, time) do not change them, as
//! locally.
//!
//! ## What differs from the local leg
//!
//! - Redaction: push cuts terms from the text it sends, so a redacted secret's words
//!   are not terms in the archive (`--no-redact` sends the text as it is).
//! - Neighbours are a message's nearest typed messages of its conversation in
//!   (`created` descending, `message_id`) order, as locally; the local index also stops
//!   looking past [`crate::stores::conversations::index::NEIGHBOUR_GAP`] rows of
//!   interleaved other conversations, which the archive does not (it has no such
//!   interleaving).
//! - Seeds ([`crate::search::postings::CONTEXT_SEEDS`]): the local index picks them per
//!   segment, the archive over all messages; on a store whose query touches fewer
//!   rows than the cap (LoCoMo, the differential test) both are every touched row.
//! - Rows deleted locally but not yet merged out of the local index still count in its
//!   statistics (as Lucene counts deleted documents); the archive counts live rows.

use std::collections::HashMap;

use super::schema::{KEYWORD_DELTAS, KEYWORD_TOTALS, MESSAGE_TERMS};
use super::search::Pool;
use super::ArchiveError;
use crate::search::postings::{self, Spread, Stats, B, CONTEXT_SEEDS, CONTEXT_SEEDS_FLOOR, K1};
use crate::stores::conversations::index::{KeywordQuery, Neighbourhood};

/// One row found: its scores and its key.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// The ranking score: BM25 of the row with its neighbours (> 0).
    pub score: f64,
    /// The row's own BM25 (0 when only its neighbours hold the words).
    pub own: f64,
    /// The machine id that pushed it.
    pub machine: String,
    /// `source`.
    pub source: String,
    /// `conversation_id`.
    pub conversation_id: String,
    /// `message_id`.
    pub message_id: String,
    /// `created`, µs since the epoch.
    pub created_us: i64,
}

/// The statistics a search scored with.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Statistics {
    /// Messages counted (`N`).
    pub messages: u64,
    /// Their words.
    pub words: u64,
    /// Document frequency of each query term, in query order.
    pub df: Vec<u64>,
}

/// A message as the search reads it: key, filters' columns, length and the counts of
/// the query terms (one per term, in query order).
#[derive(Debug, Clone)]
struct Msg {
    machine: String,
    source: String,
    conversation_id: String,
    message_id: String,
    created_us: i64,
    role: String,
    typed: bool,
    length: u16,
    tf: Vec<u32>,
}

type Conv = (String, String, String);

impl Msg {
    fn conv(&self) -> Conv {
        (
            self.machine.clone(),
            self.source.clone(),
            self.conversation_id.clone(),
        )
    }

    /// Order inside a conversation: the local index's row order (newest first, then
    /// `message_id`).
    fn cmp_in_conv(&self, other: &Self) -> std::cmp::Ordering {
        other
            .created_us
            .cmp(&self.created_us)
            .then_with(|| self.message_id.as_bytes().cmp(other.message_id.as_bytes()))
    }

    /// The local search order (`index::order`), then the machine.
    fn cmp_key(&self, other: &Self) -> std::cmp::Ordering {
        other
            .created_us
            .cmp(&self.created_us)
            .then_with(|| self.source.as_bytes().cmp(other.source.as_bytes()))
            .then_with(|| {
                self.conversation_id
                    .as_bytes()
                    .cmp(other.conversation_id.as_bytes())
            })
            .then_with(|| self.message_id.as_bytes().cmp(other.message_id.as_bytes()))
            .then_with(|| self.machine.as_bytes().cmp(other.machine.as_bytes()))
    }
}

/// The columns of a [`Msg`] for `terms` query terms (`$1`, a `text[]`): each term's
/// count one expression, not a subquery per row (ten times cheaper at 20,000 rows).
fn msg_columns(terms: usize) -> String {
    let counts: Vec<String> = (1..=terms)
        .map(|k| format!("coalesce(m.counts[array_position(m.terms, ($1::text[])[{k}])], 0)"))
        .collect();
    format!(
        "m.machine, m.source, m.conversation_id, m.message_id, m.created_us, m.role, m.typed, \
         m.length, ARRAY[{}]::integer[]",
        counts.join(", ")
    )
}

fn msg_of(r: &postgres::Row) -> Msg {
    let length: i64 = r.get(7);
    let tf: Vec<i32> = r.get(8);
    Msg {
        machine: r.get(0),
        source: r.get(1),
        conversation_id: r.get(2),
        message_id: r.get(3),
        created_us: r.get(4),
        role: r.get(5),
        typed: r.get(6),
        // Saturated as the local postings store lengths.
        length: u16::try_from(length.max(0)).unwrap_or(u16::MAX),
        tf: tf.iter().map(|&n| u32::try_from(n).unwrap_or(0)).collect(),
    }
}

/// The archive's statistics for `terms` ([`Statistics`]).
///
/// # Errors
/// [`ArchiveError`] when the archive cannot be read.
pub fn statistics(pool: &Pool, terms: &[String]) -> Result<Statistics, ArchiveError> {
    let target = pool.target().clone();
    let err = move |e: postgres::Error| target.error("reading the keyword statistics", &e);
    pool.with_prepared(|p| {
        // One statement: the totals and each term's df in query order.
        let st = p
            .statement(&format!(
                "SELECT coalesce((SELECT sum(messages) FROM {KEYWORD_TOTALS}), 0)::bigint,
                        coalesce((SELECT sum(words) FROM {KEYWORD_TOTALS}), 0)::bigint,
                        ARRAY(SELECT coalesce((SELECT sum(d.df) FROM {KEYWORD_DELTAS} d
                                               WHERE d.term = t.term), 0)::bigint
                              FROM unnest($1::text[]) WITH ORDINALITY AS t(term, i)
                              ORDER BY t.i)"
            ))
            .map_err(&err)?;
        let t = p.client.query_one(&st, &[&terms]).map_err(&err)?;
        let n = |v: i64| u64::try_from(v).unwrap_or(0);
        let df: Vec<i64> = t.get(2);
        Ok(Statistics {
            messages: n(t.get(0)),
            words: n(t.get(1)),
            df: df.into_iter().map(n).collect(),
        })
    })
}

/// `work_mem` of the keyword leg's read of the touched messages: a bitmap of every
/// message holding a common term stays exact (at the default 4 MB it went lossy at
/// 1M messages and rechecked 310,000 rows: 4.8 s instead of 0.5 s).
const TOUCHED_WORK_MEM: &str = "64MB";

/// The SQL of the touched messages' own BM25 ([`own_score`]), operation by operation:
/// `$2` the terms' idfs (0 for a term not scored), `$3` the mean length, `$4` `K1`,
/// `$5` `B`, `$6` `K1 + 1`; over the subquery's `tf` and `length`. PostgreSQL's
/// `float8` operations are IEEE doubles as Rust's, so the same operations in the same
/// order give the same bits ([`seeds`] checks every row it reads).
fn own_score_sql(terms: usize) -> String {
    let norm = "($4 * ((1.0::float8 - $5) + ($5 * least(x.length, 65535)::float8) / $3))";
    let parts: Vec<String> = (1..=terms)
        .map(|k| {
            format!(
                "(CASE WHEN x.tf[{k}] > 0 AND ($2::float8[])[{k}] > 0 \
                 THEN ((($2::float8[])[{k}] * x.tf[{k}]::float8) * $6) / (x.tf[{k}]::float8 + {norm}) \
                 ELSE 0.0::float8 END)"
            )
        })
        .collect();
    format!("(0.0::float8 + {})", parts.join(" + "))
}

/// The `cap` touched messages with the best own scores, best first, ties in the local
/// search order ([`Msg::cmp_key`]), scored and cut on the server ([`own_score_sql`])
/// so only they travel (`OFFSET 0` keeps the counts a column computed once per row:
/// inlined into each term's score, they were recomputed — and the arrays detoasted —
/// for every reference, 8.1 s instead of 1.9 s at 1M); `None` when a row's server score is not [`own_score`]'s to
/// the bit (then the caller reads every touched message).
fn seeds(
    pool: &Pool,
    terms: &[String],
    idfs: &[Option<f64>],
    avg: f64,
    cap: usize,
    err: &(dyn Fn(postgres::Error) -> ArchiveError + Sync),
) -> Result<Option<Vec<(f64, Msg)>>, ArchiveError> {
    let sql = format!(
        "SELECT x.machine, x.source, x.conversation_id, x.message_id, x.created_us, x.role,
                x.typed, x.length, x.tf, x.s
         FROM (SELECT y.*, {score} AS s
               FROM (SELECT {cols} AS tf FROM {MESSAGE_TERMS} m WHERE m.terms && $1::text[]
                     OFFSET 0) y
              ) x
         WHERE x.s > 0
         ORDER BY x.s DESC, x.created_us DESC, x.source, x.conversation_id, x.message_id, x.machine
         LIMIT $7",
        score = own_score_sql(terms.len()).replace("x.", "y."),
        cols = msg_columns(terms.len()),
    );
    let idf_param: Vec<f64> = idfs
        .iter()
        .map(|i| i.filter(|v| *v > 0.0 && v.is_finite()).unwrap_or(0.0))
        .collect();
    let limit = i64::try_from(cap).unwrap_or(i64::MAX);
    let rows = pool.with_prepared(|p| {
        let st = p.statement(&sql).map_err(err)?;
        let mut tx = p.client.transaction().map_err(err)?;
        tx.batch_execute(&format!(
            "SET TRANSACTION READ ONLY; SET LOCAL work_mem = '{TOUCHED_WORK_MEM}'"
        ))
        .map_err(err)?;
        let rows = tx
            .query(
                &st,
                &[&terms, &idf_param, &avg, &K1, &B, &(K1 + 1.0), &limit],
            )
            .map_err(err)?;
        tx.commit().map_err(err)?;
        Ok(rows)
    })?;
    let mut out = Vec::with_capacity(rows.len());
    for r in &rows {
        let m = msg_of(r);
        let server: f64 = r.get(9);
        let own = own_score(&m, idfs, avg);
        if own.to_bits() != server.to_bits() {
            return Ok(None);
        }
        out.push((own, m));
    }
    Ok(Some(out))
}

/// The best `q.limit` messages for `q.terms` by BM25 with the archive's statistics,
/// each scored with its neighbours when `around` is given (as the local
/// `Index::keyword_in_context`), best first (ties in the local search order: newest
/// first, then source, conversation, message, machine), and the statistics used.
/// `q` is the local leg's query, every filter applied to the rows returned (not to
/// their neighbours nor the statistics); `q.stop` is not looked at: the archive is
/// read in a few statements, each bounded by the pool's `statement_timeout`.
///
/// # Errors
/// [`ArchiveError`] when the archive cannot be read.
pub fn search(
    pool: &Pool,
    q: &KeywordQuery<'_>,
    around: Option<Neighbourhood>,
) -> Result<(Vec<Found>, Statistics), ArchiveError> {
    search_kept(pool, q, around, None)
}

/// Which of the given messages a filter keeps, by (machine, source,
/// conversation_id, message_id) — [`super::meaning::kept`] for the archive-side
/// filters (project, machine, user).
pub type Keep<'a> = &'a (dyn Fn(
    &[super::meaning::MessageKey],
) -> Result<std::collections::HashSet<(String, String, String, String)>, ArchiveError>
         + Sync);

/// [`search`] with one more filter on the rows returned, `keep` (applied where the
/// other filters are: to the ranked rows, not to their neighbours nor the seeds or
/// statistics), asked in growing batches of the ranked rows until `q.limit` are kept.
///
/// # Errors
/// [`ArchiveError`] when the archive cannot be read, or `keep`'s error.
pub fn search_kept(
    pool: &Pool,
    q: &KeywordQuery<'_>,
    around: Option<Neighbourhood>,
    keep: Option<Keep<'_>>,
) -> Result<(Vec<Found>, Statistics), ArchiveError> {
    let stats = statistics(pool, q.terms)?;
    if q.limit == 0 || q.terms.is_empty() {
        return Ok((Vec::new(), stats));
    }
    let avg = Stats {
        rows: stats.messages,
        total_length: stats.words,
    }
    .avg_length();
    // A term no message holds has no list locally: it is not scored (its idf unused).
    let idfs: Vec<Option<f64>> = stats
        .df
        .iter()
        .map(|&df| (df > 0).then(|| postings::idf(stats.messages, df)))
        .collect();
    let target = pool.target().clone();
    let err = move |e: postgres::Error| target.error("semantic-search's keyword leg", &e);
    let touched = || -> Result<Vec<Msg>, ArchiveError> {
        pool.with(|c| {
            let mut tx = c.transaction().map_err(&err)?;
            tx.batch_execute(&format!(
                "SET TRANSACTION READ ONLY; SET LOCAL work_mem = '{TOUCHED_WORK_MEM}'"
            ))
            .map_err(&err)?;
            let rows = tx
                .query(
                    &format!(
                        "SELECT {} FROM {MESSAGE_TERMS} m WHERE m.terms && $1::text[]",
                        msg_columns(q.terms.len())
                    ),
                    &[&q.terms],
                )
                .map_err(&err)?;
            tx.commit().map_err(&err)?;
            Ok(rows.iter().map(msg_of).collect())
        })
    };
    let own = |m: &Msg| own_score(m, &idfs, avg);
    let accept = |m: &Msg| {
        q.role.is_none_or(|r| m.role == r)
            && (!(q.exclude_injected && q.role == Some("user")) || m.typed)
            && q.source.is_none_or(|s| m.source == s)
            && q.conversation_id.is_none_or(|c| m.conversation_id == c)
            && q.since_us.is_none_or(|s| m.created_us >= s)
            && q.until_us.is_none_or(|u| m.created_us < u)
    };
    let Some(around) = around else {
        let mut found: Vec<(f64, Msg)> = touched()?
            .into_iter()
            .map(|m| (own(&m), m))
            .filter(|(s, m)| *s > 0.0 && accept(m))
            .collect();
        found.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp_key(&b.1)));
        let out = cut(found, q.limit, |(_, m)| m, keep)?
            .into_iter()
            .map(|(score, m)| found_of(score, score, m))
            .collect();
        return Ok((out, stats));
    };
    // Seeds: the touched messages with the best own scores (as locally).
    let cap = q
        .limit
        .saturating_mul(CONTEXT_SEEDS)
        .max(CONTEXT_SEEDS_FLOOR);
    // The server scores and cuts; should its scores not be ours to the bit, every
    // touched message is read and scored here.
    let mut seeds: Vec<(f64, Msg)> = match seeds(pool, q.terms, &idfs, avg, cap, &err)? {
        Some(seeds) => seeds,
        None => touched()?
            .into_iter()
            .map(|m| (own(&m), m))
            .filter(|(s, _)| *s > 0.0)
            .collect(),
    };
    if seeds.len() > cap {
        seeds.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp_key(&b.1)));
        seeds.truncate(cap);
    }
    // Every typed message within twice the window of a seed, on each side: the seeds'
    // neighbours and the neighbours' own neighbours.
    let reach = i64::try_from(around.window.saturating_mul(2)).unwrap_or(i64::MAX);
    let near: Vec<Msg> = if around.window == 0 || seeds.is_empty() {
        Vec::new()
    } else {
        let (mut keys, mut created): ([Vec<&str>; 4], Vec<i64>) = Default::default();
        for (_, m) in &seeds {
            keys[0].push(&m.machine);
            keys[1].push(&m.source);
            keys[2].push(&m.conversation_id);
            keys[3].push(&m.message_id);
            created.push(m.created_us);
        }
        let side = |cond: &str, order: &str| {
            format!(
                "SELECT {}
                 FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[], $6::text[])
                      AS s(machine, source, conversation_id, created_us, message_id),
                 LATERAL (SELECT * FROM {MESSAGE_TERMS} n
                          WHERE n.machine = s.machine AND n.source = s.source
                            AND n.conversation_id = s.conversation_id AND n.typed
                            AND ({cond})
                          ORDER BY {order} LIMIT $7) AS m",
                msg_columns(q.terms.len())
            )
        };
        let sql = format!(
            "{} UNION ALL {}",
            side(
                "n.created_us < s.created_us OR (n.created_us = s.created_us AND n.message_id > s.message_id)",
                "n.created_us DESC, n.message_id ASC"
            ),
            side(
                "n.created_us > s.created_us OR (n.created_us = s.created_us AND n.message_id < s.message_id)",
                "n.created_us ASC, n.message_id DESC"
            ),
        );
        pool.with(|c| {
            let rows = c
                .query(
                    &sql,
                    &[
                        &q.terms, &keys[0], &keys[1], &keys[2], &created, &keys[3], &reach,
                    ],
                )
                .map_err(&err)?;
            Ok::<_, ArchiveError>(rows.iter().map(msg_of).collect())
        })?
    };
    // Per conversation, its typed messages known, in conversation order.
    let mut typed: HashMap<Conv, Vec<Msg>> = HashMap::new();
    for m in near.iter().chain(seeds.iter().map(|(_, m)| m)) {
        if m.typed {
            typed.entry(m.conv()).or_default().push(m.clone());
        }
    }
    for list in typed.values_mut() {
        list.sort_by(Msg::cmp_in_conv);
        list.dedup_by(|a, b| a.cmp_in_conv(b).is_eq());
    }
    // A message's neighbours: the nearest `window` typed messages after it in
    // conversation order (older), nearest first, then before it (newer), as locally.
    let neighbours = |m: &Msg| -> Vec<&Msg> {
        let Some(list) = typed.get(&m.conv()) else {
            return Vec::new();
        };
        let at = list.partition_point(|x| x.cmp_in_conv(m).is_lt());
        let here = list.get(at).is_some_and(|x| x.cmp_in_conv(m).is_eq());
        let after = if here { at + 1 } else { at };
        let mut out: Vec<&Msg> = list[after..].iter().take(around.window).collect();
        out.extend(list[..at].iter().rev().take(around.window));
        out
    };
    // Candidates: the seeds and their neighbours, once each.
    let mut seen: std::collections::HashSet<(Conv, i64, String)> = std::collections::HashSet::new();
    let mut candidates: Vec<Msg> = Vec::new();
    for (_, s) in &seeds {
        let mut add = |m: &Msg| {
            if seen.insert((m.conv(), m.created_us, m.message_id.clone())) {
                candidates.push(m.clone());
            }
        };
        add(s);
        for n in neighbours(s) {
            add(n);
        }
    }
    let mut scored: Vec<(f64, f64, Msg)> = Vec::with_capacity(candidates.len());
    for m in candidates {
        if !accept(&m) {
            continue;
        }
        let around_m = neighbours(&m);
        let own_m = own(&m);
        let score = match around.spread {
            Spread::Sum { weight } => own_m + weight * around_m.iter().map(|n| own(n)).sum::<f64>(),
            Spread::Document { weight } => document_score(&m, &around_m, &idfs, weight, avg),
        };
        if score > 0.0 {
            scored.push((score, own_m, m));
        }
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.2.cmp_key(&b.2)));
    let out = cut(scored, q.limit, |(_, _, m)| m, keep)?
        .into_iter()
        .map(|(score, own, m)| found_of(score, own, m))
        .collect();
    Ok((out, stats))
}

/// The first `limit` of `ranked` (best first) that `keep` keeps, asked in batches
/// (twice `limit`, at least 64, doubling); the first `limit` without `keep`.
fn cut<T>(
    mut ranked: Vec<T>,
    limit: usize,
    msg: impl Fn(&T) -> &Msg,
    keep: Option<Keep<'_>>,
) -> Result<Vec<T>, ArchiveError> {
    let Some(keep) = keep else {
        ranked.truncate(limit);
        return Ok(ranked);
    };
    let mut out = Vec::with_capacity(limit.min(ranked.len()));
    let mut batch = limit.saturating_mul(2).max(64);
    let mut rest = ranked.into_iter().peekable();
    while out.len() < limit && rest.peek().is_some() {
        let chunk: Vec<T> = rest.by_ref().take(batch).collect();
        let keys: Vec<super::meaning::MessageKey> = chunk
            .iter()
            .map(|t| {
                let m = msg(t);
                (
                    m.machine.clone(),
                    m.source.clone(),
                    m.conversation_id.clone(),
                    m.message_id.clone(),
                    m.created_us,
                )
            })
            .collect();
        let kept = keep(&keys)?;
        for (t, k) in chunk.into_iter().zip(keys) {
            if out.len() < limit && kept.contains(&(k.0, k.1, k.2, k.3)) {
                out.push(t);
            }
        }
        batch = batch.saturating_mul(2);
    }
    Ok(out)
}

fn found_of(score: f64, own: f64, m: Msg) -> Found {
    Found {
        score,
        own,
        machine: m.machine,
        source: m.source,
        conversation_id: m.conversation_id,
        message_id: m.message_id,
        created_us: m.created_us,
    }
}

/// A message's own BM25: its terms' [`postings::term_score`]s summed in query order
/// (the local accumulation order).
fn own_score(m: &Msg, idfs: &[Option<f64>], avg: f64) -> f64 {
    let mut score = 0.0;
    for (idf, &tf) in idfs.iter().zip(&m.tf) {
        if let Some(idf) = idf {
            if tf > 0 && *idf > 0.0 && idf.is_finite() {
                score += postings::term_score(*idf, tf, m.length, avg);
            }
        }
    }
    score
}

/// BM25 of `m`'s context document ([`Spread::Document`]), operation by operation as
/// the local postings compute it.
fn document_score(m: &Msg, around: &[&Msg], idfs: &[Option<f64>], weight: f64, avg: f64) -> f64 {
    // The local counts are saturated at `u16::MAX` and kept only for touched rows (a
    // positive count of a scored term).
    let counts = |x: &Msg| -> Vec<f64> {
        x.tf.iter()
            .zip(idfs)
            .map(|(&n, idf)| match idf {
                Some(i) if n > 0 && *i > 0.0 && i.is_finite() => {
                    f64::from(u16::try_from(n).unwrap_or(u16::MAX))
                }
                _ => 0.0,
            })
            .collect()
    };
    let mut tf = vec![0.0f64; idfs.len()];
    let mut len = f64::from(m.length);
    for (t, n) in tf.iter_mut().zip(counts(m)) {
        *t += n;
    }
    for n in around {
        len += weight * f64::from(n.length);
        for (t, c) in tf.iter_mut().zip(counts(n)) {
            *t += weight * c;
        }
    }
    #[allow(clippy::cast_precision_loss)]
    let avg = avg * (1.0 + weight * around.len() as f64);
    let norm = K1 * (1.0 - B + B * len / avg);
    idfs.iter()
        .zip(&tf)
        .filter_map(|(idf, &f)| {
            idf.filter(|_| f > 0.0)
                .map(|i| i * f * (K1 + 1.0) / (f + norm))
        })
        .sum()
}
