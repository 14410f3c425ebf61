//! memo-search answered from the team archive (`--archive`): the memories that can
//! rank for the call are read from the archive ([`crate::archive::memo`]) into an
//! index of just those rows ([`SearchIndex::from_parts`]) and a private in-memory
//! database of their rows and links, and the local engine ranks them
//! ([`super::rank_over`], [`super::render`]): the same legs, filters, `when`,
//! supersedes, fusion, temporal routing, ties and output as on a store.
//!
//! Which rows can rank, so that the ranking is the one of the whole archive:
//! - the FTS5 legs (`bm25`, `fuzzy`; hybrid's stemmed keyword leg): every memory
//!   holding a searched term under the leg's tokenizer (so each term's document
//!   frequency is the archive's), with the archive's row and token totals; for
//!   hybrid's context-aware leg, every memory of those memories' sequences (their
//!   neighbours); `exact` (the AND of every word): the memories holding every word,
//!   each word's document frequency as push keeps it ([`memo::doc_freqs`]). Rows come
//!   with their counts of the searched terms only; the totals and fuzzy mode's
//!   vocabulary are push's too ([`memo::totals`], [`memo::vocabulary`]);
//! - the vec leg (`vec`, hybrid): the nearest vectors of the model the query is
//!   embedded with — the one-vector memories' and the long memories' chunks, by
//!   `halfvec` inner product ([`memo::nearest`]) — with their memories' exact vectors,
//!   in rounds until the `n`-th best exact score among those the filters keep, less
//!   [`RANK_SLACK`], is above what any memory not read can score (`halfvec` is within
//!   [`HALF_SLACK`] of the exact score); rows are read only for the memories scoring
//!   within [`RANK_SLACK`] of that `n`-th best or above. The scores are then computed
//!   from the exact `f32` vectors by the local leg.
//!
//! Rows are read without their bodies ([`memo::bodies`] reads the hits'), unless a
//! temporal question in hybrid mode routes on every fused candidate's body.
//!
//! Memories are told apart by (machine, id); each hit says its machine. Sequences
//! (neighbours) are per machine.

use std::collections::{HashMap, HashSet};

use rusqlite::Connection;
use serde_json::{json, Value};

use super::fts::{content_tokens, fuzzy_groups, stems_of};
use super::{parse, rank_over, render, stopped, Filter, Mode, Parsed, Request};
use crate::archive::meaning::{self, HalfVec, HALF_SLACK};
use crate::archive::memo::{self, MemoRow, Totals};
use crate::archive::schema::RegisteredModel;
use crate::archive::search::Pool;
use crate::engines::{Context, EngineError};
use crate::search::bm25::FtsIndex;
use crate::search::filter_columns::RowMeta;
use crate::search::vocabulary::Vocabulary;
use crate::stores::memories::fts::Table;
use crate::stores::memories::{json_list, Parts, SearchIndex};

/// How far under the `n`-th best exact score (times the query's norm, at least 1) a
/// memory's score may be and still be read by the vec leg: far above the rounding
/// between the sums here and the local leg's `f32` scores.
const RANK_SLACK: f64 = 1e-3;

/// Answers `req` from `pool` (see the module docs).
pub(super) fn call(ctx: &Context, pool: &Pool, req: &Request) -> Result<Value, EngineError> {
    ctx.may_read(crate::stores::Store::Memories)?;
    let map_err = |e: rusqlite::Error| EngineError::Query(format!("memo-search: {e}"));
    let loaded = ctx.memory_embedder();
    let embedder = loaded.as_deref().map_err(ToString::to_string);
    let scratch = Scratch::open().map_err(map_err)?;
    let parsed = match parse(req, &embedder, &map_err)? {
        Ok(parsed) => parsed,
        Err(ranking) => return render(&scratch.conn, ranking, req, &map_err, &|_, _| {}),
    };
    stopped(req)?;
    let mut notes: Vec<String> = Vec::new();
    let mut rows: Rows = Rows::default();
    // Bodies are read for the hits only, unless a temporal question's routing reads
    // every fused candidate's.
    let bodies = req.mode == Mode::Hybrid
        && parsed.tuning.temporal_boost > 0.0
        && super::temporal::is_temporal_question(&req.query);
    // The keyword leg's tokenizer and the terms it searches.
    let table = match req.mode {
        Mode::Hybrid if parsed.tuning.stemmed => Some(Table::Stemmed),
        Mode::Hybrid | Mode::Bm25 | Mode::Exact | Mode::Fuzzy => Some(Table::Plain),
        Mode::Vec => None,
    };
    let totals = memo::totals(pool)?;
    let all_links = memo::supersede_links(pool)?;
    if table.is_some() && totals.rows < totals.memories {
        notes.push(format!(
            "{} of the archive's {} memories have no terms (pushed before schema version 6): \
             the keyword legs do not rank them until their machine pushes again",
            totals.memories - totals.rows,
            totals.memories
        ));
    }
    let mut vocab = Vec::new();
    let mut searched: Vec<String> = Vec::new();
    // Exact mode: each searched term's document frequency in the archive.
    let mut freqs: Option<Vec<i64>> = None;
    if let Some(table) = table {
        searched = match (req.mode, table) {
            (Mode::Fuzzy, _) => {
                vocab = memo::vocabulary(pool)?;
                let v = Vocabulary::new(vocab.clone());
                fuzzy_groups(&v, &parsed.tokens, &req.stop)
                    .0
                    .into_iter()
                    .flatten()
                    .collect()
            }
            (_, Table::Stemmed) => stems_of(&content_tokens(&parsed.tokens)).map_err(map_err)?,
            // Exact needs every word (stop words too); bm25 and hybrid's plain leg
            // search the content words only.
            (Mode::Exact, Table::Plain) => parsed.tokens.clone(),
            (_, Table::Plain) => content_tokens(&parsed.tokens),
        };
        searched.sort_unstable_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
        searched.dedup();
        // `exact` ranks the memories holding every word only; the others count in the
        // words' document frequencies, read as counts.
        let found = if req.mode == Mode::Exact {
            let dfs = memo::doc_freqs(pool, table, &searched)?;
            freqs = Some(dfs);
            memo::with_all_terms(pool, table, &searched, bodies)?
        } else {
            memo::with_terms(pool, table, &searched, bodies)?
        };
        let sequences: Vec<(String, String)> =
            if req.mode == Mode::Hybrid && parsed.tuning.context.is_some() {
                let set: HashSet<(String, String)> = found
                    .iter()
                    .filter_map(|r| r.sequence.clone().map(|s| (r.machine.clone(), s)))
                    .collect();
                set.into_iter().collect()
            } else {
                Vec::new()
            };
        rows.add(found);
        stopped(req)?;
        rows.add(memo::in_sequences(
            pool, table, &searched, &sequences, bodies,
        )?);
    }
    stopped(req)?;
    // The vec leg: the model the query is embedded with, when the archive holds it.
    let mut model: Option<(RegisteredModel, Vec<f32>)> = None;
    if matches!(req.mode, Mode::Vec | Mode::Hybrid) {
        match &embedder {
            Ok(e) => {
                let models = meaning::models(pool)?;
                let held = models
                    .iter()
                    .find(|m| m.model.model == e.name() && m.model.dim as usize == e.dim());
                match held {
                    Some(m) => {
                        let (with, all) = memo::vector_coverage(pool, m)?;
                        notes.push(format!(
                            "the query was embedded with `{}`; {} of the archive's {all} \
                             memories have no vector of it{}",
                            e.name(),
                            all - with,
                            if all > with {
                                " (not ranked by the vec leg)"
                            } else {
                                ""
                            }
                        ));
                        model = Some((m.clone(), e.embed_query(&req.query)));
                    }
                    None => {
                        let names: Vec<String> = models
                            .iter()
                            .map(|m| format!("`{}` ({})", m.model.model, m.model.dim))
                            .collect();
                        let why = format!(
                            "the archive holds no memory vectors of `{}`, the model this \
                             machine embeds the query with ({})",
                            e.name(),
                            if names.is_empty() {
                                "it holds none".to_owned()
                            } else {
                                format!("it holds {}", names.join(", "))
                            }
                        );
                        if req.mode == Mode::Vec {
                            return Err(EngineError::Unavailable(format!(
                                "embedding unavailable: {why}"
                            )));
                        }
                        notes.push(format!("{why}: hybrid used its bm25 leg only"));
                    }
                }
            }
            Err(why) if req.mode == Mode::Vec => {
                return Err(EngineError::Unavailable(format!(
                    "embedding unavailable: {why}"
                )));
            }
            Err(_) => {}
        }
    }
    if let Some((m, q)) = &model {
        let n = if req.mode == Mode::Hybrid {
            parsed.tuning.candidates.max(req.limit)
        } else {
            req.limit
        };
        let t = table.unwrap_or(Table::Plain);
        let superseded: HashSet<&str> = all_links.iter().map(|(_, t)| t.as_str()).collect();
        nearest(
            pool,
            m,
            (t, &searched),
            q,
            n,
            req,
            &superseded,
            bodies,
            &mut rows,
        )?;
    }
    stopped(req)?;
    let ids = rows.ids();
    let links: Vec<(String, String)> = all_links
        .into_iter()
        .filter(|(_, target)| ids.contains(target.as_str()))
        .collect();
    let index = rows.index(
        table,
        &searched,
        freqs.as_deref(),
        &totals,
        vocab,
        &links,
        model.as_ref().map(|(m, _)| m),
    );
    scratch.fill(&rows.rows, &links).map_err(map_err)?;
    let Parsed {
        tokens,
        tuning: tune,
        notes: mut parse_notes,
        trace,
    } = parsed;
    parse_notes.extend(notes);
    // Appended last (after `output`), so every other stage sits where it does locally
    // and a binding's `/trace/N` means the same stage on both.
    let archive_stage = json!({
        "stage": "archive", "memories": totals.memories, "with_terms": totals.rows,
        "read": rows.rows.len(), "searched_terms": searched,
        "model": model.as_ref().map(|(m, _)| m.model.model.clone()),
    });
    let parsed = Parsed {
        tokens,
        tuning: tune,
        notes: parse_notes,
        trace,
    };
    let q = model.as_ref().map(|(_, q)| q.as_slice());
    let mut req = req.clone();
    if req.machine.is_some() || req.user.is_some() {
        let kept = rows
            .rows
            .iter()
            .zip(index.rows())
            .filter(|(r, _)| whose(&req, &r.row))
            .map(|(_, m)| m.rowid)
            .collect();
        req.rows = Some(std::sync::Arc::new(kept));
    }
    let req = &req;
    let ranking = rank_over(&scratch.conn, &index, parsed, embedder, q, req, &map_err)?;
    if !bodies {
        let at: Vec<usize> = ranking
            .fused
            .iter()
            .flatten()
            .filter_map(|f| usize::try_from(f.rowid - 1).ok())
            .filter(|&i| i < rows.rows.len())
            .collect();
        let keys: Vec<(String, String)> = at
            .iter()
            .map(|&i| {
                (
                    rows.rows[i].row.machine.clone(),
                    rows.rows[i].row.id.clone(),
                )
            })
            .collect();
        let read = memo::bodies(pool, &keys)?;
        let rowid: HashMap<(&str, &str), i64> = at
            .iter()
            .map(|&i| {
                let r = &rows.rows[i].row;
                let n = i64::try_from(i).unwrap_or(i64::MAX - 1) + 1;
                ((r.machine.as_str(), r.id.as_str()), n)
            })
            .collect();
        let put: Vec<(i64, String)> = read
            .into_iter()
            .filter_map(|(m, id, body)| rowid.get(&(m.as_str(), id.as_str())).map(|&n| (n, body)))
            .collect();
        scratch.set_bodies(&put).map_err(map_err)?;
    }
    let who: Vec<(String, String, String)> = rows
        .rows
        .iter()
        .map(|r| {
            (
                r.row.machine.clone(),
                r.row.label.clone(),
                r.row.user.clone(),
            )
        })
        .collect();
    let mut out = render(&scratch.conn, ranking, req, &map_err, &|rowid, hit| {
        let at = usize::try_from(rowid - 1).ok();
        if let Some((machine, label, user)) = at.and_then(|i| who.get(i)) {
            hit.insert("machine".into(), json!(label));
            hit.insert("machine_id".into(), json!(machine));
            hit.insert("user".into(), json!(user));
        }
    })?;
    if let Some(trace) = out.get_mut("trace").and_then(Value::as_array_mut) {
        trace.push(archive_stage);
    }
    Ok(out)
}

/// Reads the vec leg's candidates into `rows` (see the module docs): rounds of the
/// nearest one-vector memories (keys and vectors only) until the `n` best that `req`'s
/// filters keep are proven, then their rows (with their counts of the keyword leg's
/// `searched` terms under `table`'s tokenizer), and every long memory. `superseded`:
/// every memory some memory of the archive supersedes.
#[allow(clippy::too_many_arguments)]
fn nearest(
    pool: &Pool,
    model: &RegisteredModel,
    (table, searched): (Table, &[String]),
    q: &[f32],
    n: usize,
    req: &Request,
    superseded: &HashSet<&str>,
    bodies: bool,
    rows: &mut Rows,
) -> Result<(), EngineError> {
    let half = HalfVec::of(q);
    let filter = Filter::new(req);
    // Rows are read in the rounds only when a filter needs their columns.
    let filtered = !filter.is_empty() || req.machine.is_some() || req.user.is_some();
    let mut read: HashMap<(String, String), MemoRow> = HashMap::new();
    let norm = q
        .iter()
        .map(|&x| f64::from(x) * f64::from(x))
        .sum::<f64>()
        .sqrt()
        .max(1.0);
    let dot = |v: &[f32]| -> f64 {
        v.iter()
            .zip(q)
            .map(|(&a, &b)| f64::from(a) * f64::from(b))
            .sum()
    };
    // A memory's exact score: its best chunk's.
    let score = |chunks: &[Vec<f32>]| -> f64 {
        chunks
            .iter()
            .map(|v| dot(v))
            .fold(f64::NEG_INFINITY, f64::max)
    };
    let mut k = n.saturating_mul(2).saturating_add(32);
    let (got, nth) = loop {
        stopped(req)?;
        let got = memo::nearest(pool, model, &half, k)?;
        let complete = got.len() < k;
        let last_half = got.last().map_or(f64::NEG_INFINITY, |g| g.3);
        // Once per memory (a long memory comes once per chunk read).
        let mut distinct: HashMap<(String, String), Vec<Vec<f32>>> = HashMap::new();
        for (machine, id, chunks, _) in got {
            distinct.entry((machine, id)).or_insert(chunks);
        }
        if filtered {
            let missing: Vec<(String, String)> = distinct
                .keys()
                .filter(|key| !read.contains_key(*key))
                .cloned()
                .collect();
            for r in memo::rows_of(pool, table, searched, &missing, bodies)? {
                read.insert((r.machine.clone(), r.id.clone()), r);
            }
        }
        let mut kept: Vec<f64> = distinct
            .iter()
            .filter(|(key, _)| {
                (req.include_superseded || !superseded.contains(key.1.as_str()))
                    && (!filtered
                        || read
                            .get(*key)
                            .is_some_and(|r| filter.keep(&meta(r, 0)) && whose(req, r)))
            })
            .map(|(_, chunks)| score(chunks))
            .collect();
        kept.sort_by(|a, b| b.total_cmp(a));
        // No memory not read scores above `bound`: its vectors (or chunks) are all
        // at most `last_half` by `halfvec`.
        let bound = last_half + HALF_SLACK * norm;
        if complete || (kept.len() >= n && kept[n - 1] - RANK_SLACK * norm > bound) {
            break (distinct, kept.get(n.wrapping_sub(1)).copied());
        }
        k = k.saturating_mul(4);
    };
    // `n` memories the filters keep score `nth` or more: one scoring less (by more than
    // the rounding between this sum and the local leg's) is not among the leg's `n`
    // best, so its row is not read; every memory not read scores less than that.
    let floor = nth.map_or(f64::NEG_INFINITY, |s| s - RANK_SLACK * norm);
    let vectors: HashMap<(String, String), Vec<Vec<f32>>> = got
        .into_iter()
        .filter(|(_, chunks)| score(chunks) >= floor)
        .collect();
    let missing: Vec<(String, String)> = vectors
        .keys()
        .filter(|key| !read.contains_key(*key))
        .cloned()
        .collect();
    for r in memo::rows_of(pool, table, searched, &missing, bodies)? {
        read.insert((r.machine.clone(), r.id.clone()), r);
    }
    for (key, chunks) in vectors {
        if let Some(row) = read.remove(&key) {
            rows.put(row, Some(chunks));
        }
    }
    Ok(())
}

/// Whether `r` passes `req`'s `machine` (host label or machine id) and `user` filters.
fn whose(req: &Request, r: &MemoRow) -> bool {
    req.machine
        .as_ref()
        .is_none_or(|m| *m == r.machine || *m == r.label)
        && req.user.as_ref().is_none_or(|u| *u == r.user)
}

/// A row's filter metadata ([`RowMeta`]) as the local store's snapshot reads it.
fn meta(r: &MemoRow, rowid: i64) -> RowMeta {
    let mut files = json_list(&r.files_read);
    files.extend(json_list(&r.files_modified));
    for f in &mut files {
        f.make_ascii_lowercase();
    }
    RowMeta {
        rowid,
        id: r.id.clone(),
        kind: r.kind.clone(),
        updated: r.updated.clone(),
        files,
    }
}

/// One memory read, with its vectors when the vec leg read them.
struct Read {
    row: MemoRow,
    vectors: Option<Vec<Vec<f32>>>,
}

/// The memories read for one search, once each by (machine, id).
#[derive(Default)]
struct Rows {
    rows: Vec<Read>,
    at: HashMap<(String, String), usize>,
}

impl Rows {
    fn add(&mut self, found: Vec<MemoRow>) {
        for row in found {
            self.put(row, None);
        }
    }

    fn put(&mut self, row: MemoRow, vectors: Option<Vec<Vec<f32>>>) {
        let key = (row.machine.clone(), row.id.clone());
        match self.at.get(&key) {
            Some(&i) => {
                if vectors.is_some() {
                    self.rows[i].vectors = vectors;
                }
            }
            None => {
                self.at.insert(key, self.rows.len());
                self.rows.push(Read { row, vectors });
            }
        }
    }

    fn ids(&self) -> HashSet<&str> {
        self.rows.iter().map(|r| r.row.id.as_str()).collect()
    }

    /// Orders the rows as a store numbers them (machine, then local position) and
    /// builds their index: rowid `i + 1` is row `i`.
    #[allow(clippy::too_many_arguments)]
    fn index(
        &mut self,
        table: Option<Table>,
        searched: &[String],
        freqs: Option<&[i64]>,
        totals: &Totals,
        vocab: Vec<String>,
        links: &[(String, String)],
        model: Option<&RegisteredModel>,
    ) -> SearchIndex {
        self.rows.sort_by(|a, b| {
            (
                a.row.machine.as_bytes(),
                a.row.position,
                a.row.id.as_bytes(),
            )
                .cmp(&(
                    b.row.machine.as_bytes(),
                    b.row.position,
                    b.row.id.as_bytes(),
                ))
        });
        self.at = self
            .rows
            .iter()
            .enumerate()
            .map(|(i, r)| ((r.row.machine.clone(), r.row.id.clone()), i))
            .collect();
        let superseded: HashSet<&str> = links.iter().map(|(_, t)| t.as_str()).collect();
        let mut parts = Parts {
            model: model.map(|m| (m.model.model.clone(), m.model.dim as usize)),
            vocab,
            ..Parts::default()
        };
        for (i, r) in self.rows.iter().enumerate() {
            let rowid = i64::try_from(i).unwrap_or(i64::MAX - 1) + 1;
            parts.rows.push(meta(&r.row, rowid));
            // Sequences are per machine.
            let seq = r
                .row
                .sequence
                .as_ref()
                .map(|s| format!("{}\u{0}{s}", r.row.machine).into_boxed_str());
            parts
                .sequence
                .push((seq, r.row.created.clone().into_boxed_str()));
            parts
                .superseded
                .push(superseded.contains(r.row.id.as_str()));
            if let Some(vectors) = &r.vectors {
                let row = u32::try_from(i).unwrap_or(u32::MAX);
                for v in vectors {
                    parts.vectors.push((row, v.clone()));
                }
            }
        }
        if let Some(table) = table {
            parts.fts[table as usize] = postings(&self.rows, table, searched, freqs, totals);
        }
        SearchIndex::from_parts(parts)
    }
}

/// The postings of `searched` in `rows` under `table`'s tokenizer, with the archive's
/// totals; `None` when they cannot be indexed (an empty index then answers). `freqs`:
/// each searched term's document frequency when `rows` are not every memory holding
/// it (the others are counted as postings of no row).
fn postings(
    rows: &[Read],
    table: Table,
    searched: &[String],
    freqs: Option<&[i64]>,
    totals: &Totals,
) -> Option<FtsIndex> {
    let sizes: Vec<Option<[u32; 3]>> = rows
        .iter()
        .map(|r| r.row.terms.as_ref().map(|t| t.sizes))
        .collect();
    let mut b = FtsIndex::partial(sizes, totals.rows, totals.tokens(table));
    // `searched` is sorted bytewise; each row's terms too.
    let mut by_term: Vec<Vec<(usize, [u32; 3])>> = vec![Vec::new(); searched.len()];
    for (i, r) in rows.iter().enumerate() {
        let Some(terms) = &r.row.terms else {
            continue;
        };
        for (t, counts) in &terms.terms {
            if let Ok(k) = searched.binary_search_by(|s| s.as_bytes().cmp(t.as_bytes())) {
                by_term[k].push((i, *counts));
            }
        }
    }
    let past = i64::try_from(rows.len()).unwrap_or(i64::MAX / 2);
    for (k, (term, list)) in searched.iter().zip(by_term).enumerate() {
        let held = i64::try_from(list.len()).unwrap_or(i64::MAX);
        for (i, counts) in list {
            let d = i64::try_from(i).unwrap_or(i64::MAX);
            b.posting(term.as_bytes(), d, Some(i), counts).ok()?;
        }
        let others = freqs.and_then(|f| f.get(k)).map_or(0, |&df| df - held);
        for j in 0..others.max(0) {
            b.posting(term.as_bytes(), past + j, None, [1, 0, 0]).ok()?;
        }
    }
    b.finish().ok()
}

/// The private in-memory database of the rows read: `memories` and `memory_links` as
/// the store has them (the columns the output and the temporal routing read), so the
/// local output code reads them by rowid.
struct Scratch {
    conn: Connection,
}

impl Scratch {
    fn open() -> Result<Self, rusqlite::Error> {
        let conn = Connection::open_in_memory()?;
        conn.execute_batch(
            "CREATE TABLE memories (rowid INTEGER PRIMARY KEY, id TEXT NOT NULL, title TEXT,
                type TEXT, tags TEXT, created TEXT, updated TEXT, body TEXT, files_read TEXT,
                files_modified TEXT);
             CREATE TABLE memory_links (id TEXT NOT NULL, rel TEXT NOT NULL,
                target TEXT NOT NULL, PRIMARY KEY (id, rel, target)) WITHOUT ROWID;",
        )?;
        Ok(Self { conn })
    }

    /// Sets the bodies of rows read without them: (rowid, body).
    fn set_bodies(&self, bodies: &[(i64, String)]) -> Result<(), rusqlite::Error> {
        let mut put = self
            .conn
            .prepare("UPDATE memories SET body = ?2 WHERE rowid = ?1")?;
        for (rowid, body) in bodies {
            put.execute(rusqlite::params![rowid, body])?;
        }
        Ok(())
    }

    /// Writes `rows` (rowid `i + 1`: row `i`) and their links (`superseding`: every
    /// (memory, target) superseding one of them).
    fn fill(&self, rows: &[Read], superseding: &[(String, String)]) -> Result<(), rusqlite::Error> {
        let tx = self.conn.unchecked_transaction()?;
        {
            let mut put = tx
                .prepare("INSERT INTO memories VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)")?;
            let mut link = tx.prepare("INSERT OR IGNORE INTO memory_links VALUES (?1, ?2, ?3)")?;
            for (i, r) in rows.iter().enumerate() {
                let m = &r.row;
                let rowid = i64::try_from(i).unwrap_or(i64::MAX - 1) + 1;
                put.execute(rusqlite::params![
                    rowid,
                    m.id,
                    m.title,
                    m.kind,
                    m.tags,
                    m.created,
                    m.updated,
                    m.body,
                    m.files_read,
                    m.files_modified
                ])?;
                for t in &m.supersedes {
                    link.execute(rusqlite::params![m.id, "supersedes", t])?;
                }
                for c in &m.conversations {
                    link.execute(rusqlite::params![m.id, "conversation", c])?;
                }
            }
            for (id, target) in superseding {
                link.execute(rusqlite::params![id, "supersedes", target])?;
            }
        }
        tx.commit()
    }
}
