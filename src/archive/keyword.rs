//! semantic-search's keyword leg on the team archive: BM25 over the stemmed terms push
//! keeps per message ([`super::schema::MESSAGE_TERMS`]), scored here exactly as the
//! local leg scores its postings ([`crate::search::postings`]: the same `idf`,
//! `term_score`, neighbour documents, seeds and ties), so the same rows with the same
//! statistics get the same scores to the bit.
//!
//! ## Reading (schema version 8)
//!
//! A search reads the query terms' postings whole ([`super::schema::KEYWORD_POSTINGS`]:
//! per term and push batch a packed list of (message id, count, length)) beside the
//! statistics, scores every posting's own BM25 here, and reads messages by id
//! ([`super::schema::MESSAGE_TERMS`]' `id`) best first, only as far as the ranking
//! needs: the seeds (or, without neighbours, the rows kept), every message tied with
//! the last of them included so the local tie order applies; a posting whose message
//! is gone (a rewritten or pruned conversation's, until [`super::compact`] drops it)
//! is skipped. The seeds' neighbours are read by id too — a conversation's messages
//! have consecutive ids in the local row order — in one statement of id ranges (two
//! at once when there are many), with a hash of each row's conversation key instead
//! of the key; a seed whose range does not reach its neighbours' neighbours (a run of
//! injected messages) is looked up by conversation order. No message's term arrays
//! are read (versions 5–7 read every touched message's arrays: 1.9–3.5 s at 1M
//! messages for common words).
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

use super::schema::{
    KEYWORD_DELTAS, KEYWORD_POSTINGS, KEYWORD_TOTALS, MESSAGE_TERMS, POSTING_BYTES,
};
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

/// A message as the search reads it: id, key, filters' columns, length and the counts
/// of the query terms (one per term, in query order, from the postings).
#[derive(Debug, Clone)]
struct Msg {
    id: i64,
    /// Its conversation, shared by the rows of one conversation read together.
    conv: std::sync::Arc<Conv>,
    message_id: String,
    created_us: i64,
    role: String,
    typed: bool,
    length: u16,
    tf: Vec<u32>,
}

/// A conversation's key.
#[derive(Debug, PartialEq, Eq)]
struct Conv {
    machine: String,
    source: String,
    conversation_id: String,
}

impl Msg {
    fn same_conv(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.conv, &other.conv) || self.conv == other.conv
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
            .then_with(|| {
                self.conv
                    .source
                    .as_bytes()
                    .cmp(other.conv.source.as_bytes())
            })
            .then_with(|| {
                self.conv
                    .conversation_id
                    .as_bytes()
                    .cmp(other.conv.conversation_id.as_bytes())
            })
            .then_with(|| self.message_id.as_bytes().cmp(other.message_id.as_bytes()))
            .then_with(|| {
                self.conv
                    .machine
                    .as_bytes()
                    .cmp(other.conv.machine.as_bytes())
            })
    }
}

/// The columns of a [`Msg`] but its counts (which come from the postings).
const MSG_COLUMNS: &str = "m.id, m.machine, m.source, m.conversation_id, m.message_id, \
                           m.created_us, m.role, m.typed, m.length";

/// The query terms' postings by message id: each message's length and counts.
struct Postings {
    terms: usize,
    slot: HashMap<u32, usize, foldhash::fast::FixedState>,
    ids: Vec<u32>,
    lengths: Vec<u16>,
    /// `terms` counts per slot.
    tf: Vec<u32>,
}

impl Postings {
    fn tf_of(&self, id: i64) -> Vec<u32> {
        u32::try_from(id)
            .ok()
            .and_then(|id| self.slot.get(&id))
            .map_or_else(
                || vec![0; self.terms],
                |&s| self.tf[s * self.terms..(s + 1) * self.terms].to_vec(),
            )
    }
}

fn msg_of(r: &postgres::Row, postings: &Postings) -> Msg {
    let id: i64 = r.get(0);
    Msg {
        id,
        conv: std::sync::Arc::new(Conv {
            machine: r.get(1),
            source: r.get(2),
            conversation_id: r.get(3),
        }),
        message_id: r.get(4),
        created_us: r.get(5),
        role: r.get(6),
        typed: r.get(7),
        length: saturated(r.get(8)),
        tf: postings.tf_of(id),
    }
}

/// A message's length saturated as the local postings store it.
fn saturated(length: i64) -> u16 {
    u16::try_from(length.max(0)).unwrap_or(u16::MAX)
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

/// Reads the postings of `terms` ([`KEYWORD_POSTINGS`]): every message holding one,
/// live or deleted (a deleted one has no row in [`super::schema::MESSAGE_TERMS`]
/// any more).
fn read_postings(
    pool: &Pool,
    terms: &[String],
    err: &(dyn Fn(postgres::Error) -> ArchiveError + Sync),
) -> Result<Postings, ArchiveError> {
    let rows = pool.with_prepared(|p| {
        let st = p
            .statement(&format!(
                "SELECT term, postings FROM {KEYWORD_POSTINGS} WHERE term = ANY($1::text[])"
            ))
            .map_err(err)?;
        p.client.query(&st, &[&terms]).map_err(err)
    })?;
    let mut out = Postings {
        terms: terms.len(),
        slot: HashMap::default(),
        ids: Vec::new(),
        lengths: Vec::new(),
        tf: Vec::new(),
    };
    for r in &rows {
        let term: &str = r.get(0);
        let bytes: &[u8] = r.get(1);
        // A term may be asked more than once: each of its places counts it.
        let places: Vec<usize> = terms
            .iter()
            .enumerate()
            .filter(|(_, t)| t.as_str() == term)
            .map(|(k, _)| k)
            .collect();
        for p in bytes.chunks_exact(POSTING_BYTES) {
            let id = u32::from_be_bytes([p[0], p[1], p[2], p[3]]);
            let n = u32::from_be_bytes([p[4], p[5], p[6], p[7]]);
            let len = u16::from_be_bytes([p[8], p[9]]);
            let next = out.ids.len();
            let s = *out.slot.entry(id).or_insert(next);
            if s == next {
                out.ids.push(id);
                out.lengths.push(len);
                out.tf.extend(std::iter::repeat_n(0, terms.len()));
            }
            for &k in &places {
                out.tf[s * terms.len() + k] = n;
            }
        }
    }
    Ok(out)
}

/// Reads the messages of `ids` that the archive holds (a deleted one is missing).
fn read_messages(
    pool: &Pool,
    ids: &[i64],
    postings: &Postings,
    err: &(dyn Fn(postgres::Error) -> ArchiveError + Sync),
) -> Result<Vec<Msg>, ArchiveError> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    in_halves(ids.len(), |part| {
        let ids = &ids[part];
        pool.with_prepared(|p| {
            let st = p
                .statement(&format!(
                    "SELECT {MSG_COLUMNS} FROM {MESSAGE_TERMS} m WHERE m.id = ANY($1::bigint[])"
                ))
                .map_err(err)?;
            let rows = p.client.query(&st, &[&ids]).map_err(err)?;
            Ok(rows.iter().map(|r| msg_of(r, postings)).collect())
        })
    })
}

/// From this many ids or id ranges on, [`in_halves`] reads them in two statements.
const IN_HALVES_FROM: usize = 256;

/// `read` of the items `0..n`: with [`IN_HALVES_FROM`] or more, of each half at once
/// (two connections of the pool, so two server processes read), the first half's
/// results first.
///
/// # Errors
/// `read`'s first error.
fn in_halves<R: Send>(
    n: usize,
    read: impl Fn(std::ops::Range<usize>) -> Result<Vec<R>, ArchiveError> + Sync,
) -> Result<Vec<R>, ArchiveError> {
    if n < IN_HALVES_FROM {
        return read(0..n);
    }
    let half = n / 2;
    std::thread::scope(|s| {
        let second = s.spawn(|| read(half..n));
        let mut out = read(0..half)?;
        out.extend(
            second
                .join()
                .unwrap_or_else(|_| Err(ArchiveError::new("an archive reader panicked")))?,
        );
        Ok(out)
    })
}

/// The scored postings (own score > 0, with the message id), best first as far as
/// asked ([`Ranking::grow`]).
struct Ranking {
    scored: Vec<(f64, u32)>,
    /// `scored[..ready]` are the best `ready`, every tie of the last included, sorted.
    ready: usize,
}

impl Ranking {
    /// Makes `scored[..ready]` hold the best `k` at least (and every posting tied with
    /// the last of them), best first; returns the new `ready`.
    fn grow(&mut self, k: usize) -> usize {
        let desc = |a: &(f64, u32), b: &(f64, u32)| b.0.total_cmp(&a.0);
        let from = self.ready;
        if k <= from {
            return from;
        }
        let rest = &mut self.scored[from..];
        let want = k - from;
        if want >= rest.len() {
            rest.sort_unstable_by(desc);
            self.ready = self.scored.len();
            return self.ready;
        }
        rest.select_nth_unstable_by(want - 1, desc);
        let last = rest[want - 1].0;
        let mut end = want;
        for i in want..rest.len() {
            if rest[i].0.total_cmp(&last).is_eq() {
                rest.swap(i, end);
                end += 1;
            }
        }
        rest[..end].sort_unstable_by(desc);
        self.ready = from + end;
        self.ready
    }
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
/// The postings of the query terms are read whole ([`KEYWORD_POSTINGS`]) and scored
/// here; the messages are read by id, best first, as far as the ranking needs them
/// (a posting whose message is gone is skipped).
///
/// # Errors
/// [`ArchiveError`] when the archive cannot be read, or `keep`'s error.
pub fn search_kept(
    pool: &Pool,
    q: &KeywordQuery<'_>,
    around: Option<Neighbourhood>,
    keep: Option<Keep<'_>>,
) -> Result<(Vec<Found>, Statistics), ArchiveError> {
    if q.limit == 0 || q.terms.is_empty() {
        return Ok((Vec::new(), statistics(pool, q.terms)?));
    }
    let target = pool.target().clone();
    let err = move |e: postgres::Error| target.error("semantic-search's keyword leg", &e);
    // The statistics and the postings side by side, each on its own connection.
    let (stats, postings) = std::thread::scope(|s| {
        let stats = s.spawn(|| statistics(pool, q.terms));
        let postings = read_postings(pool, q.terms, &err);
        let stats = stats
            .join()
            .unwrap_or_else(|_| Err(ArchiveError::new("the statistics' reader panicked")));
        (stats, postings)
    });
    let (stats, postings) = (stats?, postings?);
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
    let n = postings.terms;
    let mut ranking = Ranking {
        scored: postings
            .ids
            .iter()
            .enumerate()
            .filter_map(|(s, &id)| {
                let score = own_score(
                    &postings.tf[s * n..(s + 1) * n],
                    postings.lengths[s],
                    &idfs,
                    avg,
                );
                (score > 0.0).then_some((score, id))
            })
            .collect(),
        ready: 0,
    };
    let own = |m: &Msg| own_score(&m.tf, m.length, &idfs, avg);
    let accept = |m: &Msg| {
        q.role.is_none_or(|r| m.role == r)
            && (!(q.exclude_injected && q.role == Some("user")) || m.typed)
            && q.source.is_none_or(|s| m.conv.source == s)
            && q.conversation_id
                .is_none_or(|c| m.conv.conversation_id == c)
            && q.since_us.is_none_or(|s| m.created_us >= s)
            && q.until_us.is_none_or(|u| m.created_us < u)
    };
    // The live messages of the ranking's best, read as it grows until `enough` of
    // them pass `wanted` (or every posting is read); every message tied with the last
    // read is read too, so the local tie order can be applied. True once every
    // posting is read.
    let mut live: Vec<(f64, Msg)> = Vec::new();
    let mut read = 0usize;
    let mut fill = |enough: usize,
                    wanted: &dyn Fn(&Msg) -> bool,
                    live: &mut Vec<(f64, Msg)>|
     -> Result<bool, ArchiveError> {
        let mut k = enough.saturating_add(enough / 4).max(16);
        loop {
            let ready = ranking.grow(k);
            if ready > read {
                let ids: Vec<i64> = ranking.scored[read..ready]
                    .iter()
                    .map(|&(_, id)| i64::from(id))
                    .collect();
                for m in read_messages(pool, &ids, &postings, &err)? {
                    live.push((own(&m), m));
                }
                read = ready;
            }
            let all = read == ranking.scored.len();
            if all || live.iter().filter(|(_, m)| wanted(m)).count() >= enough {
                return Ok(all);
            }
            k = k.saturating_mul(2);
        }
    };
    let sort = |v: &mut Vec<(f64, Msg)>| {
        v.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp_key(&b.1)));
    };
    let Some(around) = around else {
        // The best accepted rows; with `keep`, more until it keeps `q.limit`.
        let mut enough = q.limit;
        loop {
            let complete = fill(enough, &accept, &mut live)?;
            let mut found: Vec<(f64, Msg)> =
                live.iter().filter(|(_, m)| accept(m)).cloned().collect();
            sort(&mut found);
            let out = cut(found, q.limit, |(_, m)| m, keep)?;
            if out.len() >= q.limit || complete {
                let out = out
                    .into_iter()
                    .map(|(score, m)| found_of(score, score, m))
                    .collect();
                return Ok((out, stats));
            }
            enough = enough.saturating_mul(4);
        }
    };
    // Seeds: the live messages with the best own scores (as locally).
    let cap = q
        .limit
        .saturating_mul(CONTEXT_SEEDS)
        .max(CONTEXT_SEEDS_FLOOR);
    fill(cap, &|_| true, &mut live)?;
    let mut seeds = live;
    sort(&mut seeds);
    seeds.truncate(cap);
    let near = neighbourhoods(pool, &seeds, around.window, &postings, &err)?;
    // Every message known (the seeds, then their neighbourhoods), once each by id,
    // and its conversation as a number.
    let mut rows: Vec<Msg> = Vec::with_capacity(seeds.len() + near.len());
    let mut at: HashMap<i64, usize, foldhash::fast::FixedState> = HashMap::default();
    for m in seeds.iter().map(|(_, m)| m.clone()).chain(near) {
        if let std::collections::hash_map::Entry::Vacant(e) = at.entry(m.id) {
            e.insert(rows.len());
            rows.push(m);
        }
    }
    let mut convs: HashMap<(&str, &str, &str), usize, foldhash::fast::FixedState> =
        HashMap::default();
    let conv: Vec<usize> = rows
        .iter()
        .map(|m| {
            let next = convs.len();
            *convs
                .entry((&m.conv.machine, &m.conv.source, &m.conv.conversation_id))
                .or_insert(next)
        })
        .collect();
    // Per conversation, its typed messages known, in conversation order.
    let mut typed: Vec<Vec<usize>> = vec![Vec::new(); convs.len()];
    for (i, m) in rows.iter().enumerate() {
        if m.typed {
            typed[conv[i]].push(i);
        }
    }
    for list in &mut typed {
        list.sort_by(|&a, &b| rows[a].cmp_in_conv(&rows[b]));
        list.dedup_by(|a, b| rows[*a].cmp_in_conv(&rows[*b]).is_eq());
    }
    // A message's neighbours: the nearest `window` typed messages after it in
    // conversation order (older), nearest first, then before it (newer), as locally.
    let neighbours = |i: usize| -> Vec<&Msg> {
        let list = &typed[conv[i]];
        let m = &rows[i];
        let at = list.partition_point(|&x| rows[x].cmp_in_conv(m).is_lt());
        let here = list
            .get(at)
            .is_some_and(|&x| rows[x].cmp_in_conv(m).is_eq());
        let after = if here { at + 1 } else { at };
        let mut out: Vec<&Msg> = list[after..]
            .iter()
            .take(around.window)
            .map(|&x| &rows[x])
            .collect();
        out.extend(
            list[..at]
                .iter()
                .rev()
                .take(around.window)
                .map(|&x| &rows[x]),
        );
        out
    };
    let index_of = |m: &Msg| at.get(&m.id).copied();
    // Candidates: the seeds and their neighbours, once each.
    let mut seen: std::collections::HashSet<(usize, i64, &str), foldhash::fast::FixedState> =
        std::collections::HashSet::default();
    let mut candidates: Vec<usize> = Vec::new();
    for (_, s) in &seeds {
        let Some(si) = index_of(s) else { continue };
        let mut add = |i: usize| {
            let m = &rows[i];
            if seen.insert((conv[i], m.created_us, m.message_id.as_str())) {
                candidates.push(i);
            }
        };
        add(si);
        for n in neighbours(si) {
            if let Some(ni) = index_of(n) {
                add(ni);
            }
        }
    }
    let mut scored: Vec<(f64, f64, usize)> = Vec::with_capacity(candidates.len());
    for i in candidates {
        let m = &rows[i];
        if !accept(m) {
            continue;
        }
        let around_m = neighbours(i);
        let own_m = own(m);
        let score = match around.spread {
            Spread::Sum { weight } => own_m + weight * around_m.iter().map(|n| own(n)).sum::<f64>(),
            Spread::Document { weight } => document_score(m, &around_m, &idfs, weight, avg),
        };
        if score > 0.0 {
            scored.push((score, own_m, i));
        }
    }
    scored.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then_with(|| rows[a.2].cmp_key(&rows[b.2]))
    });
    let scored: Vec<(f64, f64, &Msg)> = scored
        .into_iter()
        .map(|(score, own, i)| (score, own, &rows[i]))
        .collect();
    let out = cut(scored, q.limit, |(_, _, m)| *m, keep)?
        .into_iter()
        .map(|(score, own, m)| found_of(score, own, m.clone()))
        .collect();
    Ok((out, stats))
}

/// Every typed message within twice `window` typed messages of a seed, on each side,
/// in its conversation: the seeds' neighbours and the neighbours' own neighbours.
/// Read by id (a conversation's messages have consecutive ids in conversation order,
/// [`super::schema`]): a range of ids around each seed, in one statement, with a
/// hash of each row's conversation key instead of the key; a seed whose range holds
/// too few of them before its conversation ends (many injected messages) is looked up
/// by conversation order instead.
fn neighbourhoods(
    pool: &Pool,
    seeds: &[(f64, Msg)],
    window: usize,
    postings: &Postings,
    err: &(dyn Fn(postgres::Error) -> ArchiveError + Sync),
) -> Result<Vec<Msg>, ArchiveError> {
    if window == 0 || seeds.is_empty() {
        return Ok(Vec::new());
    }
    let reach = window.saturating_mul(2);
    // Enough for `reach` typed messages and one injected message between them; a seed
    // with more is looked up by conversation order below.
    let span = i64::try_from(reach + 1).unwrap_or(i64::MAX);
    // Merged ranges of ids.
    let mut ranges: Vec<(i64, i64)> = seeds
        .iter()
        .map(|(_, m)| (m.id.saturating_sub(span), m.id.saturating_add(span)))
        .collect();
    ranges.sort_unstable();
    let mut merged: Vec<(i64, i64)> = Vec::with_capacity(ranges.len());
    for (lo, hi) in ranges {
        match merged.last_mut() {
            Some(last) if lo <= last.1 + 1 => last.1 = last.1.max(hi),
            _ => merged.push((lo, hi)),
        }
    }
    let (los, his): (Vec<i64>, Vec<i64>) = merged.iter().copied().unzip();
    // Each row's conversation as a 64-bit hash of its key rather than the key's three
    // text columns (most of what a row costs to send and decode): put in id order, a
    // run of equal hashes is one conversation (two conversations adjacent in id order
    // would need equal hashes, a 2^-64 chance), and it takes its key from a seed in
    // it. A run without a seed is no seed's neighbourhood.
    let read = |los: &[i64], his: &[i64]| {
        pool.with_prepared(|p| {
            let st = p
                .statement(&format!(
                    "SELECT m.id, m.created_us, m.message_id, m.role, m.typed, m.length,
                            hashtextextended(m.conversation_id,
                                hashtextextended(m.source, hashtextextended(m.machine, 0)))
                     FROM unnest($1::bigint[], $2::bigint[]) AS r(lo, hi),
                     LATERAL (SELECT * FROM {MESSAGE_TERMS} n
                              WHERE n.id BETWEEN r.lo AND r.hi) AS m"
                ))
                .map_err(err)?;
            p.client.query(&st, &[&los, &his]).map_err(err)
        })
    };
    let rows = in_halves(los.len(), |part| read(&los[part.clone()], &his[part]))?;
    let seed_conv: HashMap<i64, &std::sync::Arc<Conv>> =
        seeds.iter().map(|(_, m)| (m.id, &m.conv)).collect();
    // In id order (sorted here: a sort in the statement cost more than reading).
    let mut order: Vec<(i64, i64, usize)> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| (r.get(0), r.get(6), i))
        .collect();
    order.sort_unstable();
    let mut near: Vec<Msg> = Vec::with_capacity(rows.len());
    let mut start = 0;
    for end in 1..=order.len() {
        if end < order.len() && order[end].1 == order[end - 1].1 {
            continue;
        }
        let run = &order[start..end];
        start = end;
        let Some(conv) = run.iter().find_map(|&(id, _, _)| seed_conv.get(&id)) else {
            continue;
        };
        near.extend(run.iter().map(|&(id, _, i)| {
            let r = &rows[i];
            Msg {
                id,
                conv: std::sync::Arc::clone(conv),
                message_id: r.get(2),
                created_us: r.get(1),
                role: r.get(3),
                typed: r.get(4),
                length: saturated(r.get(5)),
                tf: postings.tf_of(id),
            }
        }));
    }
    // Seeds whose range does not reach `reach` typed messages, or the end of their
    // conversation, on a side.
    let by_id: HashMap<i64, &Msg> = near.iter().map(|m| (m.id, m)).collect();
    let covered = |id: i64| {
        let at = merged.partition_point(|r| r.1 < id);
        merged.get(at).is_some_and(|r| r.0 <= id && id <= r.1)
    };
    let short: Vec<&Msg> = seeds
        .iter()
        .map(|(_, m)| m)
        .filter(|s| {
            [-1i64, 1].iter().any(|&step| {
                let mut found = 0;
                let mut id = s.id;
                loop {
                    id += step;
                    if !covered(id) {
                        return true;
                    }
                    match by_id.get(&id) {
                        Some(m) if m.same_conv(s) => {
                            if m.typed {
                                found += 1;
                                if found >= reach {
                                    return false;
                                }
                            }
                        }
                        // The conversation's end: its ids are consecutive.
                        _ => return false,
                    }
                }
            })
        })
        .collect();
    if short.is_empty() {
        return Ok(near);
    }
    let (mut keys, mut created): ([Vec<&str>; 4], Vec<i64>) = Default::default();
    for m in &short {
        keys[0].push(&m.conv.machine);
        keys[1].push(&m.conv.source);
        keys[2].push(&m.conv.conversation_id);
        keys[3].push(&m.message_id);
        created.push(m.created_us);
    }
    let reach = i64::try_from(reach).unwrap_or(i64::MAX);
    let side = |cond: &str, order: &str| {
        format!(
            "SELECT {MSG_COLUMNS}
             FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[])
                  AS s(machine, source, conversation_id, created_us, message_id),
             LATERAL (SELECT * FROM {MESSAGE_TERMS} n
                      WHERE n.machine = s.machine AND n.source = s.source
                        AND n.conversation_id = s.conversation_id AND n.typed
                        AND ({cond})
                      ORDER BY {order} LIMIT $6) AS m"
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
    let more: Vec<Msg> = pool.with(|c| {
        let rows = c
            .query(
                &sql,
                &[&keys[0], &keys[1], &keys[2], &created, &keys[3], &reach],
            )
            .map_err(err)?;
        Ok::<_, ArchiveError>(rows.iter().map(|r| msg_of(r, postings)).collect())
    })?;
    near.extend(more);
    Ok(near)
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
                    m.conv.machine.clone(),
                    m.conv.source.clone(),
                    m.conv.conversation_id.clone(),
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
        machine: m.conv.machine.clone(),
        source: m.conv.source.clone(),
        conversation_id: m.conv.conversation_id.clone(),
        message_id: m.message_id,
        created_us: m.created_us,
    }
}

/// A message's own BM25 (its counts `tf` of the query terms, its `length`): its
/// terms' [`postings::term_score`]s summed in query order (the local accumulation
/// order).
fn own_score(tf: &[u32], length: u16, idfs: &[Option<f64>], avg: f64) -> f64 {
    let mut score = 0.0;
    for (idf, &tf) in idfs.iter().zip(tf) {
        if let Some(idf) = idf {
            if tf > 0 && *idf > 0.0 && idf.is_finite() {
                score += postings::term_score(*idf, tf, length, avg);
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
