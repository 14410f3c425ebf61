//! Reads an FTS5 table's postings, row sizes and totals out of FTS5's own data into a
//! [`FtsIndex`] (the BM25 machinery of [`crate::search::bm25`]). Two tables hold the
//! same text ([`Table`]): `memories_fts` (words as written, accents folded) and
//! `memories_stem` (the same, Porter-stemmed: what hybrid's keyword leg reads).
//!
//! Exactness. Nothing here re-tokenizes text; everything is read from FTS5's own data:
//! - postings from an `fts5vocab` table of type `instance` over the table
//!   (`temp.<table>_instance`, a per-connection temp table the store creates when it
//!   opens: [`CREATE_INSTANCE_TABLE`]):
//!   one row per token instance `(term, rowid, column, offset)`, in term then rowid
//!   order; they are folded into one posting per (term, row) holding the term's count
//!   in each column;
//! - each row's length in tokens from `<table>_docsize` (what `xColumnSize`
//!   reads for `bm25()`);
//! - the row count and total token count from the averages record (`<table>_data`
//!   id 1; what `xRowCount` and `xColumnTotalSize` read).
//!
//!
//! Guards: the build checks that every row's per-column instance counts equal its
//! `_docsize` entry and that terms come in strictly increasing byte order; if not, the
//! index is unavailable and the engine keeps asking SQLite.

use rusqlite::{Connection, OptionalExtension};

use crate::search::bm25::{FtsIndex, Unavailable};

/// One of the store's two FTS5 tables over the memories' title, tags and body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Table {
    /// `memories_fts`: `unicode61 remove_diacritics 2` (bm25, exact and fuzzy modes).
    Plain,
    /// `memories_stem`: `porter unicode61 remove_diacritics 2` (hybrid's keyword leg).
    Stemmed,
}

impl Table {
    /// Both tables, [`Table::Plain`] first.
    pub const ALL: [Self; 2] = [Self::Plain, Self::Stemmed];

    /// The table's name in the store.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Plain => "memories_fts",
            Self::Stemmed => "memories_stem",
        }
    }

    /// The table's FTS5 tokenizer (the schema in `stores::memories` says the same).
    #[must_use]
    pub fn tokenizer(self) -> &'static str {
        match self {
            Self::Plain => "unicode61 remove_diacritics 2",
            Self::Stemmed => "porter unicode61 remove_diacritics 2",
        }
    }

    /// The temp `fts5vocab` `instance` table over the table, which the store creates
    /// on each connection (temp objects never touch the database file).
    fn instances(self) -> String {
        format!("temp.{}_instance", self.name())
    }

    /// A per-connection temp FTS5 table with the table's columns and tokenizer, into
    /// which [`load_rows`] copies the text of a few rows to read their token instances.
    fn delta(self) -> String {
        format!("temp.{}_delta", self.name())
    }
}

/// Statements creating, for each [`Table`], its `instance` table, its delta table and
/// the delta's `instance` table; run before `PRAGMA query_only` on read-only
/// connections (that pragma refuses even temp schema changes). [`load_rows`] checks
/// the counts against `_docsize`. (An `fts5vocab` table over a table the store does
/// not have yet is created but fails when read; readers check [`has_table`] first.)
pub static CREATE_INSTANCE_TABLE: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    Table::ALL
        .iter()
        .map(|t| {
            let name = t.name();
            format!(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.{name}_instance \
                 USING fts5vocab(main, '{name}', 'instance'); \
                 CREATE VIRTUAL TABLE IF NOT EXISTS temp.{name}_delta USING fts5(\
                 title, tags, body, tokenize = '{}'); \
                 CREATE VIRTUAL TABLE IF NOT EXISTS temp.{name}_delta_instance \
                 USING fts5vocab(temp, '{name}_delta', 'instance');",
                t.tokenizer()
            )
        })
        .collect()
});

/// Whether the store behind `conn` has `table` (a store last written before
/// `memories_stem` existed, opened read-only, does not).
///
/// # Errors
/// A SQLite error while reading the schema.
pub fn has_table(conn: &Connection, table: Table) -> Result<bool, rusqlite::Error> {
    conn.query_row(
        "SELECT count(*) FROM main.sqlite_master WHERE type = 'table' AND name = ?1",
        [table.name()],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n > 0)
}

/// [`has_table`] for each of [`Table::ALL`], by position.
///
/// # Errors
/// A SQLite error while reading the schema.
pub fn tables(conn: &Connection) -> Result<[bool; 2], rusqlite::Error> {
    Ok([
        has_table(conn, Table::ALL[0])?,
        has_table(conn, Table::ALL[1])?,
    ])
}

/// Columns of both tables, in table order (bm25() weights are given in this order).
pub const COLUMNS: [&str; 3] = ["title", "tags", "body"];

enum LoadError {
    Sqlite(rusqlite::Error),
    Unavailable(Unavailable),
}

impl From<rusqlite::Error> for LoadError {
    fn from(e: rusqlite::Error) -> Self {
        Self::Sqlite(e)
    }
}

impl From<rusqlite::types::FromSqlError> for LoadError {
    fn from(e: rusqlite::types::FromSqlError) -> Self {
        Self::Sqlite(e.into())
    }
}

impl From<Unavailable> for LoadError {
    fn from(why: Unavailable) -> Self {
        Self::Unavailable(why)
    }
}

/// Reads the index through `conn`. `rowids` are the metadata's rows, increasing:
/// row `i` of the index is FTS5 rowid `rowids[i]` (an FTS5 row they lack still
/// counts in the table statistics but is never returned). `Ok(Err(why))` when the
/// store's FTS5 data fails the guards (module docs).
///
/// The caller holds a read transaction, so every part comes from one snapshot.
///
/// # Errors
/// A SQLite error while reading.
pub fn load(
    conn: &Connection,
    table: Table,
    rowids: &[i64],
) -> Result<Result<FtsIndex, Unavailable>, rusqlite::Error> {
    let row_of = |rowid: i64| {
        // Rowids are usually dense from the first one: try that slot first.
        let guess = rowids.first().and_then(|f| usize::try_from(rowid - f).ok());
        match guess {
            Some(g) if rowids.get(g) == Some(&rowid) => Some(g),
            _ => rowids.binary_search(&rowid).ok(),
        }
    };
    settle(read(conn, table, rowids.len(), &row_of, "", &table.instances()).map(|(index, _)| index))
}

/// A load's outcome as the public functions give it: guards failed → `Ok(Err(why))`.
fn settle<T>(read: Result<T, LoadError>) -> Result<Result<T, Unavailable>, rusqlite::Error> {
    match read {
        Ok(v) => Ok(Ok(v)),
        Err(LoadError::Unavailable(why)) => Ok(Err(why)),
        Err(LoadError::Sqlite(e)) => Err(e),
    }
}

/// The index of `n_meta` rows (`row_of`: an FTS5 rowid's row) from the `_docsize`
/// records `docsize_filter` selects (`WHERE …`, or empty for all) and the token
/// instances of the `fts5vocab` table `instances`; with the table totals `(nRow,
/// tokens)` it was built for.
fn read(
    conn: &Connection,
    table: Table,
    n_meta: usize,
    row_of: &impl Fn(i64) -> Option<usize>,
    docsize_filter: &str,
    instances: &str,
) -> Result<(FtsIndex, (i64, i64)), LoadError> {
    let mut names = Vec::new();
    let name = table.name();
    let mut stmt = conn.prepare(&format!("SELECT name FROM pragma_table_info('{name}')"))?;
    let mut q = stmt.query([])?;
    while let Some(r) = q.next()? {
        names.push(r.get::<_, String>(0)?);
    }
    if names != COLUMNS {
        return Err(LoadError::Unavailable(
            "the FTS5 table's columns are not title, tags, body",
        ));
    }

    // Table totals, as xRowCount and xColumnTotalSize read them.
    let (n_rows, n_tokens) = totals(conn, table)??;

    // Row lengths, as xColumnSize reads them.
    let mut sizes: Vec<Option<[u32; 3]>> = vec![None; n_meta];
    let mut stmt = conn.prepare(&format!(
        "SELECT id, sz FROM {name}_docsize {docsize_filter}"
    ))?;
    let mut q = stmt.query([])?;
    while let Some(r) = q.next()? {
        let Some(row) = row_of(r.get(0)?) else {
            continue;
        };
        let sz = r.get_ref(1)?.as_blob_or_null()?.and_then(decode_sizes);
        let Some(sz) = sz else {
            return Err(LoadError::Unavailable("unreadable FTS5 docsize record"));
        };
        sizes[row] = Some(sz);
    }

    let mut index = FtsIndex::builder(sizes, n_rows, n_tokens);
    let mut stmt = conn.prepare(&format!("SELECT term, doc, col FROM {instances}"))?;
    let mut q = stmt.query([])?;
    while let Some(r) = q.next()? {
        let t = r.get_ref(0)?.as_bytes()?;
        let d: i64 = r.get(1)?;
        let col = match r.get_ref(2)?.as_bytes()? {
            b"title" => 0,
            b"tags" => 1,
            b"body" => 2,
            _ => return Err(LoadError::Unavailable("unknown column in fts5vocab")),
        };
        index.instance(t, d, row_of(d), col)?;
    }
    Ok((index.finish()?, (n_rows, n_tokens)))
}

/// The postings of `table`'s rows `rowids` (increasing; row `i` of the result is
/// `rowids[i]`) as an [`FtsIndex`] of just those rows, to be joined to an index of the
/// rows before them with [`FtsIndex::append`]; plus the table totals `(nRow, tokens)`
/// of the averages record. The rows' text is copied from `table` into its delta
/// table (`temp.<table>_delta`, the same tokenizer) and read back through its `instance` table;
/// the counts must equal the rows' `_docsize` records. `Ok(Err(why))` when the rows'
/// data fails the guards.
///
/// The caller holds a transaction, so rows and totals are one snapshot, and has
/// lifted `PRAGMA query_only` for the temp table's writes ([`QueryOnlyLifted`]).
///
/// # Errors
/// A SQLite error while reading or writing the temp table.
pub fn load_rows(
    conn: &Connection,
    table: Table,
    rowids: &[i64],
) -> Result<Result<(FtsIndex, i64, i64), Unavailable>, rusqlite::Error> {
    let list = rowids
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let (name, delta) = (table.name(), table.delta());
    let copied = conn.execute_batch(&format!(
        "DELETE FROM {delta}; INSERT INTO {delta}(rowid, title, tags, body) \
         SELECT rowid, title, tags, body FROM main.{name} WHERE rowid IN ({list});"
    ));
    let row_of = |rowid: i64| rowids.binary_search(&rowid).ok();
    let read = copied.map_err(LoadError::from).and_then(|()| {
        read(
            conn,
            table,
            rowids.len(),
            &row_of,
            &format!("WHERE id IN ({list})"),
            &format!("{delta}_instance"),
        )
    });
    let cleared = conn.execute_batch(&format!("DELETE FROM {delta};"));
    let read = settle(read.map(|(index, (n_rows, n_tokens))| (index, n_rows, n_tokens)))?;
    cleared?;
    Ok(read)
}

/// `PRAGMA query_only = 0` on a read-only store connection until dropped, for writes
/// to its temp tables ([`load_rows`]); the file stays unwritable through SQLite's
/// read-only open. Declared before the transaction it serves, so it is dropped after
/// it: SQLite refuses to commit a transaction that wrote anything (temp tables
/// included) while `query_only` is on.
pub struct QueryOnlyLifted<'a> {
    conn: &'a Connection,
    was_on: bool,
}

impl<'a> QueryOnlyLifted<'a> {
    /// Lifts `query_only` on `conn` (a no-op when it is off).
    ///
    /// # Errors
    /// A SQLite error reading or setting the pragma.
    pub fn new(conn: &'a Connection) -> Result<Self, rusqlite::Error> {
        let was_on = conn.query_row("PRAGMA query_only", [], |r| r.get::<_, i64>(0))? != 0;
        if was_on {
            conn.pragma_update(None, "query_only", 0)?;
        }
        Ok(Self { conn, was_on })
    }
}

impl Drop for QueryOnlyLifted<'_> {
    fn drop(&mut self) {
        if self.was_on {
            // Cannot fail outside a pending write transaction, which the caller's
            // transaction (dropped first) has ended.
            let _ = self.conn.pragma_update(None, "query_only", 1);
        }
    }
}

/// `table`'s row count as FTS5 keeps it (the averages record's nRow, what `xRowCount`
/// reads; 0 without one): one point read, where `count(*)` walks every row. `None`
/// when the record is unreadable.
///
/// # Errors
/// A SQLite error while reading (the table missing included).
pub(super) fn row_count(conn: &Connection, table: Table) -> Result<Option<i64>, rusqlite::Error> {
    Ok(totals(conn, table)?.ok().map(|(n_rows, _)| n_rows))
}

/// The averages record's `(nRow, Σ column totals)`; `(0, 0)` without one.
fn totals(
    conn: &Connection,
    table: Table,
) -> Result<Result<(i64, i64), Unavailable>, rusqlite::Error> {
    let averages: Option<Vec<u8>> = conn
        .query_row(
            &format!("SELECT block FROM {}_data WHERE id = 1", table.name()),
            [],
            |r| r.get(0),
        )
        .optional()?;
    Ok(match averages.as_deref().map(decode_averages) {
        Some(Some(totals)) => Ok(totals),
        Some(None) => Err("unreadable FTS5 averages record"),
        None => Ok((0, 0)),
    })
}

/// SQLite's varint (as `sqlite3Fts5GetVarint`): value and length, `None` if cut short.
fn varint(buf: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for i in 0..8 {
        let b = *buf.get(i)?;
        v = (v << 7) | u64::from(b & 0x7F);
        if b & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    Some(((v << 8) | u64::from(*buf.get(8)?), 9))
}

/// The averages record: `(nRow, Σ column totals)`, as `sqlite3Fts5IndexGetAverages`
/// and `sqlite3Fts5StorageSize(-1)` read it (missing trailing columns count 0).
fn decode_averages(blob: &[u8]) -> Option<(i64, i64)> {
    if blob.is_empty() {
        return Some((0, 0));
    }
    let (n_rows, mut at) = varint(blob)?;
    let mut total = 0i64;
    for _ in 0..COLUMNS.len() {
        if at >= blob.len() {
            break;
        }
        let (size, len) = varint(&blob[at..])?;
        #[allow(clippy::cast_possible_wrap)] // C reads them as `u64` into `i64`
        {
            total = total.wrapping_add(size as i64);
        }
        at += len;
    }
    #[allow(clippy::cast_possible_wrap)]
    Some((n_rows as i64, total))
}

/// A `_docsize` record: the row's token count per column, `None` unless it holds
/// exactly one varint per column (`fts5StorageDecodeSizeArray`).
fn decode_sizes(blob: &[u8]) -> Option<[u32; 3]> {
    let mut sizes = [0u32; 3];
    let mut at = 0;
    for s in &mut sizes {
        let (v, len) = varint(blob.get(at..)?)?;
        #[allow(clippy::cast_possible_truncation)] // `fts5GetVarint32` keeps 32 bits
        {
            *s = v as u32;
        }
        at += len;
    }
    (at == blob.len()).then_some(sizes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_records() {
        assert_eq!(varint(&[0x05]), Some((5, 1)));
        assert_eq!(varint(&[0x86, 0x8D, 0x20]), Some((100_000, 3)));
        assert_eq!(varint(&[0x81]), None);
        assert_eq!(varint(&[0xFF; 9]), Some((u64::MAX, 9)));
        // nRow 100000, then title, tags, body totals.
        let avg = [134, 141, 32, 161, 245, 21, 143, 145, 9, 130, 195, 180, 125];
        assert_eq!(
            decode_averages(&avg),
            Some((100_000, 555_669 + 247_945 + 5_298_813))
        );
        assert_eq!(
            decode_averages(&[0x02, 0x07]),
            Some((2, 7)),
            "missing columns are 0"
        );
        assert_eq!(decode_sizes(&[3, 0, 0x81, 0x00]), Some([3, 0, 128]));
        assert_eq!(decode_sizes(&[3, 0]), None);
        assert_eq!(decode_sizes(&[3, 0, 1, 9]), None, "trailing bytes");
    }

    /// Every term the tokenizer emits tokenizes to itself again, so the quoted term in
    /// the engine's `MATCH` text is a one-term phrase of exactly that term. Checked
    /// for every Unicode scalar value, alone (a token's first character) and between
    /// two `x` (any later character); a SQLite upgrade that changes this fails here.
    #[test]
    fn tokens_retokenize_to_themselves() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE VIRTUAL TABLE t USING fts5(x, tokenize = 'unicode61 remove_diacritics 2');
             CREATE VIRTUAL TABLE t_row USING fts5vocab(t, 'row');
             CREATE VIRTUAL TABLE t_inst USING fts5vocab(t, 'instance');",
        )
        .unwrap();
        let mut doc = String::new();
        for c in (1..=0x10_FFFF_u32).filter_map(char::from_u32) {
            doc.extend([c, ' ', 'x', c, 'x', ' ']);
        }
        conn.execute("INSERT INTO t(rowid, x) VALUES (1, ?1)", [&doc])
            .unwrap();
        let terms: Vec<String> = conn
            .prepare("SELECT term FROM t_row")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(terms.len() > 100_000, "{}", terms.len());
        conn.execute("DELETE FROM t", []).unwrap();
        conn.execute("INSERT INTO t(rowid, x) VALUES (2, ?1)", [terms.join(" ")])
            .unwrap();
        let again: Vec<String> = conn
            .prepare("SELECT term FROM t_inst ORDER BY offset")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let first_difference = terms.iter().zip(&again).position(|(a, b)| a != b);
        assert_eq!(first_difference, None);
        assert_eq!(terms.len(), again.len());
    }
}

/// One row's terms as a [`Table`]'s tokenizer cuts its title, tags and body
/// ([`row_terms`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RowTerms {
    /// Tokens per column (title, tags, body): the row's `_docsize` record.
    pub sizes: [u32; 3],
    /// Each distinct term (bytewise increasing) with its count per column.
    pub terms: Vec<(String, [u32; 3])>,
}

/// The terms of each of `rows` (`[title, tags, body]`, tags joined by spaces as the
/// store writes them) exactly as `table`'s FTS5 tokenizer indexes them: the rows are
/// written into a private in-memory FTS5 table of that tokenizer and read back
/// through an `fts5vocab` `instance` table (never the store). What push sends the
/// team archive, so the archive's BM25 is the local one.
///
/// # Errors
/// A SQLite error of the private database.
pub fn row_terms(table: Table, rows: &[[&str; 3]]) -> Result<Vec<RowTerms>, rusqlite::Error> {
    let conn = Connection::open_in_memory()?;
    conn.execute_batch(&format!(
        "CREATE VIRTUAL TABLE q USING fts5(title, tags, body, tokenize = '{}');
         CREATE VIRTUAL TABLE v USING fts5vocab(q, 'instance');",
        table.tokenizer()
    ))?;
    {
        let mut insert =
            conn.prepare("INSERT INTO q(rowid, title, tags, body) VALUES (?1, ?2, ?3, ?4)")?;
        for (i, r) in rows.iter().enumerate() {
            let rowid = i64::try_from(i).unwrap_or(i64::MAX);
            insert.execute(rusqlite::params![rowid, r[0], r[1], r[2]])?;
        }
    }
    let mut out = vec![RowTerms::default(); rows.len()];
    let mut stmt = conn.prepare("SELECT term, doc, col FROM v")?;
    let mut q = stmt.query([])?;
    while let Some(r) = q.next()? {
        let term = r.get::<_, String>(0)?;
        let Some(row) = usize::try_from(r.get::<_, i64>(1)?)
            .ok()
            .and_then(|d| out.get_mut(d))
        else {
            continue;
        };
        let col = match r.get_ref(2)?.as_bytes()? {
            b"title" => 0,
            b"tags" => 1,
            _ => 2,
        };
        row.sizes[col] += 1;
        match row.terms.last_mut() {
            Some((t, counts)) if *t == term => counts[col] += 1,
            _ => {
                let mut counts = [0; 3];
                counts[col] = 1;
                row.terms.push((term, counts));
            }
        }
    }
    // Instances come term by term, so each row's terms are already in term order;
    // sorted bytewise to be sure.
    for r in &mut out {
        r.terms.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    }
    Ok(out)
}
