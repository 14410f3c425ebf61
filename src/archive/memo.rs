//! memo-search's rows on the team archive: the memories push sent
//! ([`super::schema`]'s `memories`), their terms under the memories store's two FTS5
//! tokenizers ([`MEMORY_TERMS`], schema version 6) and their vectors
//! (`memory_vectors_<slot>`), read for one search. The ranking is the local engine's
//! (`engines::memo_search`, its archive source): this module only reads.
//!
//! ## Statistics
//!
//! FTS5's BM25 needs the table's row count, its token count and each query term's
//! document frequency. Push keeps them (schema version 9, [`MEMORY_DELTAS`] and
//! [`MEMORY_TOTALS`]: signed deltas a read sums), so a search reads the totals
//! ([`totals`]) and the searched terms' document frequencies ([`doc_freqs`]) without
//! scanning the memories, and fuzzy mode's vocabulary ([`vocabulary`]) is the plain
//! tokenizer's terms held by some memory. Every row holding a query term is still
//! read ([`with_terms`]) — BM25 ranks them all — but only with the searched terms'
//! counts, not the row's whole term lists (`exact` mode reads the rows holding every
//! term, [`with_all_terms`]).
//! With one machine's store pushed whole they are the local store's; with several
//! machines they are the team's (as semantic-search's keyword leg).

use super::meaning::HalfVec;
use super::schema::{
    memory_tokenizer, RegisteredModel, MEMORY_DELTAS, MEMORY_TERMS, MEMORY_TOTALS, SCHEMA,
};
use super::search::Pool;
use super::ArchiveError;
use crate::stores::memories::fts::{RowTerms, Table};

/// One memory of the archive as memo-search ranks and shows it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemoRow {
    /// The machine id that pushed it.
    pub machine: String,
    /// Its host label.
    pub label: String,
    /// The user recorded on it.
    pub user: String,
    /// The memory's id.
    pub id: String,
    /// Title.
    pub title: String,
    /// Type.
    pub kind: String,
    /// Tags, as the local store keeps them (a JSON array).
    pub tags: String,
    /// `created`, `YYYY-MM-DDTHH:MM:SSZ` (as the local store keeps it).
    pub created: String,
    /// `updated`, the same form.
    pub updated: String,
    /// Body.
    pub body: String,
    /// Files read (a JSON array).
    pub files_read: String,
    /// Files modified (a JSON array).
    pub files_modified: String,
    /// Ids of the memories it supersedes.
    pub supersedes: Vec<String>,
    /// Conversations it was saved from.
    pub conversations: Vec<String>,
    /// Its local rowid on its machine (`i64::MAX` without a terms row).
    pub position: i64,
    /// Its sequence (neighbours) on its machine.
    pub sequence: Option<String>,
    /// Its token counts per column and, of the terms searched, those it holds with
    /// their counts, under the tokenizer asked for (`None`: no terms row, pushed before
    /// schema version 6).
    pub terms: Option<RowTerms>,
}

/// The table's totals FTS5's BM25 reads: rows and tokens (all columns).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Totals {
    /// Memories with terms.
    pub rows: i64,
    /// Their tokens under the plain tokenizer.
    pub plain_tokens: i64,
    /// Their tokens under the stemming tokenizer.
    pub stem_tokens: i64,
    /// Memories in the archive (with terms or not).
    pub memories: i64,
}

impl Totals {
    /// Tokens under `table`'s tokenizer.
    pub fn tokens(&self, table: Table) -> i64 {
        match table {
            Table::Plain => self.plain_tokens,
            Table::Stemmed => self.stem_tokens,
        }
    }
}

fn err(pool: &Pool, what: &'static str) -> impl Fn(postgres::Error) -> ArchiveError {
    let target = pool.target().clone();
    move |e| target.error(what, &e)
}

/// [`Totals`] of the archive, as push keeps them ([`MEMORY_TOTALS`]).
///
/// # Errors
/// [`ArchiveError`] when the archive cannot be read.
pub fn totals(pool: &Pool) -> Result<Totals, ArchiveError> {
    let err = err(pool, "reading the memories' statistics");
    pool.with(|c| {
        let r = c
            .query_one(
                &format!(
                    "SELECT coalesce(sum(with_terms), 0)::bigint,
                        coalesce(sum(plain_tokens), 0)::bigint,
                        coalesce(sum(stem_tokens), 0)::bigint,
                        coalesce(sum(memories), 0)::bigint
                     FROM {MEMORY_TOTALS}"
                ),
                &[],
            )
            .map_err(&err)?;
        Ok(Totals {
            rows: r.get(0),
            plain_tokens: r.get(1),
            stem_tokens: r.get(2),
            memories: r.get(3),
        })
    })
}

fn prefix(table: Table) -> &'static str {
    match table {
        Table::Plain => "plain",
        Table::Stemmed => "stem",
    }
}

/// The columns of a [`MemoRow`] (`m`: memories, `t`: its terms, `k`: machines, `s`:
/// the searched terms it holds, [`from`]); the body is read when `bodies` (else empty:
/// [`bodies`] reads it for the hits).
fn row_columns(table: Table, bodies: bool) -> String {
    let p = prefix(table);
    let body = if bodies { "m.body" } else { "''::text" };
    format!(
        "m.machine, coalesce(k.label, m.machine), m.user_name, m.id, m.title, m.type, m.tags,
         m.created, m.updated, {body}, m.files_read, m.files_modified, m.supersedes,
         m.conversations, coalesce(t.position, {}), t.sequence, t.{p}_sizes,
         coalesce(s.terms, '{{}}'), coalesce(s.counts, '{{}}')",
        i64::MAX
    )
}

/// The tables of a [`MemoRow`]: `$1` (`text[]`, `searched` terms) is the searched
/// terms, of which each row's are read with their counts (three per term: title,
/// tags, body) under `table`'s tokenizer, not its whole term lists. A few terms are
/// looked up in the row's list (`array_position`); many (fuzzy mode's expansions) are
/// matched while unnesting it (a hashed `= ANY`).
fn from(table: Table, searched: usize) -> String {
    let p = prefix(table);
    let found = if searched <= HASHED_FROM {
        format!("(SELECT w, array_position(t.{p}_terms, w) AS i FROM unnest($1::text[]) w) q")
    } else {
        format!(
            "(SELECT u.w, u.i FROM unnest(t.{p}_terms) WITH ORDINALITY u(w, i)
              WHERE u.w = ANY($1::text[])) q"
        )
    };
    format!(
        "FROM {SCHEMA}.memories m
         LEFT JOIN {MEMORY_TERMS} t ON t.machine = m.machine AND t.id = m.id
         LEFT JOIN {SCHEMA}.machines k ON k.machine = m.machine
         LEFT JOIN LATERAL (
             SELECT array_agg(q.w ORDER BY q.i) FILTER (WHERE g.k = 1) AS terms,
                    array_agg(t.{p}_counts[3 * q.i - 3 + g.k] ORDER BY q.i, g.k) AS counts
             FROM {found}, generate_series(1, 3) g(k)
             WHERE q.i IS NOT NULL) s ON true"
    )
}

/// Most searched terms [`from`] looks up one by one in each row's term list (more are
/// matched by unnesting the list: PostgreSQL hashes an `= ANY` of 9 values or more).
const HASHED_FROM: usize = 8;

fn time(t: chrono::NaiveDateTime) -> String {
    crate::stores::memories::format_time(&t.and_utc())
}

fn row_of(r: &postgres::Row) -> MemoRow {
    let sizes: Option<Vec<i32>> = r.get(16);
    let terms: Option<Vec<String>> = r.get(17);
    let counts: Option<Vec<i32>> = r.get(18);
    let n = |v: i32| u32::try_from(v).unwrap_or(0);
    let terms = match (sizes, terms, counts) {
        (Some(s), Some(t), Some(c)) if s.len() == 3 && c.len() == 3 * t.len() => Some(RowTerms {
            sizes: [n(s[0]), n(s[1]), n(s[2])],
            terms: t
                .into_iter()
                .zip(c.chunks_exact(3))
                .map(|(t, c)| (t, [n(c[0]), n(c[1]), n(c[2])]))
                .collect(),
        }),
        _ => None,
    };
    MemoRow {
        machine: r.get(0),
        label: r.get(1),
        user: r.get(2),
        id: r.get(3),
        title: r.get(4),
        kind: r.get(5),
        tags: r.get(6),
        created: time(r.get(7)),
        updated: time(r.get(8)),
        body: r.get(9),
        files_read: r.get(10),
        files_modified: r.get(11),
        supersedes: r.get(12),
        conversations: r.get(13),
        position: r.get(14),
        sequence: r.get(15),
        terms,
    }
}

/// Every memory holding any of `terms` under `table`'s tokenizer, with its counts of
/// `terms` (and its body when `bodies`).
///
/// # Errors
/// [`ArchiveError`] when the archive cannot be read.
pub fn with_terms(
    pool: &Pool,
    table: Table,
    terms: &[String],
    bodies: bool,
) -> Result<Vec<MemoRow>, ArchiveError> {
    rows_whose_terms(pool, table, terms, bodies, "&&")
}

/// Every memory holding all of `terms` under `table`'s tokenizer, with its counts of
/// `terms` (and its body when `bodies`): `exact` mode's rows.
///
/// # Errors
/// [`ArchiveError`] when the archive cannot be read.
pub fn with_all_terms(
    pool: &Pool,
    table: Table,
    terms: &[String],
    bodies: bool,
) -> Result<Vec<MemoRow>, ArchiveError> {
    rows_whose_terms(pool, table, terms, bodies, "@>")
}

/// The memories whose terms under `table`'s tokenizer stand in array relation `op`
/// (`&&` overlaps, `@>` contains) to `terms`, as [`with_terms`] returns them.
fn rows_whose_terms(
    pool: &Pool,
    table: Table,
    terms: &[String],
    bodies: bool,
    op: &'static str,
) -> Result<Vec<MemoRow>, ArchiveError> {
    if terms.is_empty() {
        return Ok(Vec::new());
    }
    let err = err(pool, "memo-search's keyword leg");
    let p = prefix(table);
    pool.with(|c| {
        Ok(c.query(
            &format!(
                "SELECT {} {} WHERE t.{p}_terms {op} $1::text[]",
                row_columns(table, bodies),
                from(table, terms.len())
            ),
            &[&terms],
        )
        .map_err(&err)?
        .iter()
        .map(row_of)
        .collect())
    })
}

/// Each of `terms`' document frequency under `table`'s tokenizer: the memories with
/// terms holding it, in `terms`' order, as push keeps them ([`MEMORY_DELTAS`]).
///
/// # Errors
/// [`ArchiveError`] when the archive cannot be read.
pub fn doc_freqs(pool: &Pool, table: Table, terms: &[String]) -> Result<Vec<i64>, ArchiveError> {
    if terms.is_empty() {
        return Ok(Vec::new());
    }
    let err = err(pool, "reading the terms' document frequencies");
    let tokenizer = memory_tokenizer(table);
    pool.with(|c| {
        Ok(c.query(
            &format!(
                "SELECT (SELECT coalesce(sum(d.df), 0)::bigint FROM {MEMORY_DELTAS} d
                         WHERE d.tokenizer = $1 AND d.term = u.w)
                 FROM unnest($2::text[]) WITH ORDINALITY u(w, i) ORDER BY i"
            ),
            &[&tokenizer, &terms],
        )
        .map_err(&err)?
        .iter()
        .map(|r| r.get(0))
        .collect())
    })
}

/// Every memory of the sequences `sequences` (machine, sequence), with its counts of
/// `searched` under `table`'s tokenizer.
///
/// # Errors
/// [`ArchiveError`] when the archive cannot be read.
pub fn in_sequences(
    pool: &Pool,
    table: Table,
    searched: &[String],
    sequences: &[(String, String)],
    bodies: bool,
) -> Result<Vec<MemoRow>, ArchiveError> {
    if sequences.is_empty() {
        return Ok(Vec::new());
    }
    let err = err(pool, "memo-search's neighbours");
    let (machines, seqs): (Vec<&str>, Vec<&str>) = sequences
        .iter()
        .map(|(m, s)| (m.as_str(), s.as_str()))
        .unzip();
    pool.with(|c| {
        Ok(c.query(
            &format!(
                "SELECT {} {} WHERE (t.machine, t.sequence) IN
                   (SELECT * FROM unnest($2::text[], $3::text[]))",
                row_columns(table, bodies),
                from(table, searched.len())
            ),
            &[&searched, &machines, &seqs],
        )
        .map_err(&err)?
        .iter()
        .map(row_of)
        .collect())
    })
}

/// The plain tokenizer's terms held by some memory (fuzzy mode's vocabulary), sorted
/// bytewise, as push keeps them ([`MEMORY_DELTAS`]).
///
/// # Errors
/// [`ArchiveError`] when the archive cannot be read.
pub fn vocabulary(pool: &Pool) -> Result<Vec<String>, ArchiveError> {
    let err = err(pool, "reading the memories' vocabulary");
    let tokenizer = memory_tokenizer(Table::Plain);
    pool.with(|c| {
        Ok(c.query(
            &format!(
                "SELECT term FROM {MEMORY_DELTAS} WHERE tokenizer = $1
                 GROUP BY term HAVING sum(df) > 0 ORDER BY term"
            ),
            &[&tokenizer],
        )
        .map_err(&err)?
        .iter()
        .map(|r| r.get(0))
        .collect())
    })
}

/// `(id, target)` for every memory `id` of the archive superseding a memory `target`
/// (every supersede link, read once per search: one scan of the memories).
///
/// # Errors
/// [`ArchiveError`] when the archive cannot be read.
pub fn supersede_links(pool: &Pool) -> Result<Vec<(String, String)>, ArchiveError> {
    let err = err(pool, "reading the supersede links");
    pool.with(|c| {
        Ok(c.query(
            &format!(
                "SELECT DISTINCT m.id, s FROM {SCHEMA}.memories m, unnest(m.supersedes) s
                 WHERE cardinality(m.supersedes) > 0"
            ),
            &[],
        )
        .map_err(&err)?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect())
    })
}

/// How many memories hold a vector of `model`, of how many.
///
/// # Errors
/// [`ArchiveError`] when the archive cannot be read.
pub fn vector_coverage(pool: &Pool, model: &RegisteredModel) -> Result<(i64, i64), ArchiveError> {
    let err = err(pool, "reading the memories' vectors");
    pool.with(|c| {
        let r = c
            .query_one(
                &format!(
                    "SELECT (SELECT count(*) FROM {}), (SELECT count(*) FROM {SCHEMA}.memories)",
                    model.memories_table()
                ),
                &[],
            )
            .map_err(&err)?;
        Ok((r.get(0), r.get(1)))
    })
}

/// A memory read by [`nearest`]: its key (machine, id), its exact vectors (one, or a
/// long memory's chunks) and the `halfvec` inner product with the query of the vector
/// or chunk that brought it (a long memory comes once per chunk among the nearest).
pub type Near = (String, String, Vec<Vec<f32>>, f64);

/// The `k` vectors of `model` nearest the query `half` by `halfvec` inner product —
/// the one-vector memories' and the long memories' chunks (`memory_chunks_<slot>`),
/// a sequential scan of the vectors only: exact in that order —, best first, each with
/// its memory's exact vectors; [`rows_of`] reads their rows.
///
/// # Errors
/// [`ArchiveError`] when the archive cannot be read.
pub fn nearest(
    pool: &Pool,
    model: &RegisteredModel,
    half: &HalfVec,
    k: usize,
) -> Result<Vec<Near>, ArchiveError> {
    let err = err(pool, "memo-search's vec leg");
    let dim = model.model.dim as usize;
    let one = i32::try_from(dim * 4).unwrap_or(i32::MAX);
    let k = i64::try_from(k).unwrap_or(i64::MAX);
    let vectors = model.memories_table();
    let chunks = model.chunks_table();
    pool.with(|c| {
        let mut tx = c.transaction().map_err(&err)?;
        tx.batch_execute(&format!(
            "SET TRANSACTION READ ONLY; SET LOCAL statement_timeout = {};
             SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off",
            super::search::DEADLINE.as_millis()
        ))
        .map_err(&err)?;
        let rows = tx
            .query(
                &format!(
                    "SELECT r.machine, r.id, v.exact, r.s FROM (
                       SELECT u.machine, u.id, u.s FROM (
                         SELECT o.machine, o.id, -(o.embedding <#> $1)::float8 AS s FROM {vectors} o
                         WHERE octet_length(o.exact) = $2
                         UNION ALL
                         SELECT c.machine, c.id, -(c.embedding <#> $1)::float8 FROM {chunks} c) u
                       ORDER BY u.s DESC LIMIT $3) r
                     JOIN {vectors} v ON v.machine = r.machine AND v.id = r.id
                     ORDER BY r.s DESC"
                ),
                &[half, &one, &k],
            )
            .map_err(&err)?;
        tx.commit().map_err(&err)?;
        Ok(rows
            .iter()
            .map(|r| {
                let bytes: Vec<u8> = r.get(2);
                let values = crate::stores::memories::decode_vector(&bytes);
                let chunks = if dim > 0 && values.len() > dim && values.len().is_multiple_of(dim) {
                    values.chunks_exact(dim).map(<[f32]>::to_vec).collect()
                } else {
                    vec![values]
                };
                (r.get(0), r.get(1), chunks, r.get(3))
            })
            .collect())
    })
}

/// The memories `keys` (machine, id), with their counts of `searched` under `table`'s
/// tokenizer, in no particular order (a key the archive no longer holds is left out).
///
/// # Errors
/// [`ArchiveError`] when the archive cannot be read.
pub fn rows_of(
    pool: &Pool,
    table: Table,
    searched: &[String],
    keys: &[(String, String)],
    bodies: bool,
) -> Result<Vec<MemoRow>, ArchiveError> {
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let err = err(pool, "memo-search's vec leg");
    let (machines, ids): (Vec<&str>, Vec<&str>) =
        keys.iter().map(|(m, i)| (m.as_str(), i.as_str())).unzip();
    pool.with(|c| {
        Ok(c.query(
            &format!(
                "SELECT {} {} WHERE (m.machine, m.id) IN
                   (SELECT * FROM unnest($2::text[], $3::text[]))",
                row_columns(table, bodies),
                from(table, searched.len())
            ),
            &[&searched, &machines, &ids],
        )
        .map_err(&err)?
        .iter()
        .map(row_of)
        .collect())
    })
}

/// The bodies of the memories `keys` (machine, id): (machine, id, body), in no
/// particular order.
///
/// # Errors
/// [`ArchiveError`] when the archive cannot be read.
pub fn bodies(
    pool: &Pool,
    keys: &[(String, String)],
) -> Result<Vec<(String, String, String)>, ArchiveError> {
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let err = err(pool, "reading the hits' bodies");
    let (machines, ids): (Vec<&str>, Vec<&str>) =
        keys.iter().map(|(m, i)| (m.as_str(), i.as_str())).unzip();
    pool.with(|c| {
        Ok(c.query(
            &format!(
                "SELECT m.machine, m.id, m.body FROM {SCHEMA}.memories m WHERE (m.machine, m.id) IN
                   (SELECT * FROM unnest($1::text[], $2::text[]))"
            ),
            &[&machines, &ids],
        )
        .map_err(&err)?
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect())
    })
}
