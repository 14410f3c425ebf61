//! The in-memory snapshot searches read ([`SearchIndex`]): every memory's metadata,
//! the embedding matrix of one model, and on first use the FTS5 postings, the
//! vocabulary, the filter columns and the neighbours; kept per opened store and
//! refreshed in place after small appends ([`SearchIndex::refresh`]).

use std::sync::{Arc, OnceLock};

use rusqlite::Connection;

use super::neighbours::Neighbours;
use super::read::{has_links_table, superseded_ids};
use super::schema::{change_range, json_list};
use super::{fts, MemoryStore};
use crate::search::bm25::{FtsIndex, Unavailable};
use crate::search::filter_columns::{FilterColumns, RowMeta};
use crate::search::vectors::{VectorMatrix, VectorMatrixBuilder};
use crate::search::vocabulary::Vocabulary;

impl MemoryStore {
    /// The in-memory [`SearchIndex`] of this store for embeddings from `model` (name
    /// and dimension; none when `None`), built on first use and kept until the file
    /// changes (another connection committed, per `PRAGMA data_version`, or this one
    /// wrote). Then a change of a few new memories (what `memo-save` writes) is applied
    /// to the held index in place ([`SearchIndex::refresh`]: ~the new rows' cost plus
    /// one pass over the postings) when no search holds it; any other change reloads
    /// it whole (~1–5 s at 100k memories). `conn` is this store's connection, already
    /// locked by the caller. Only reads the file.
    ///
    /// # Errors
    /// A SQLite error while reading the rows.
    pub fn search_index(
        &self,
        conn: &Connection,
        model: Option<(&str, usize)>,
    ) -> Result<Arc<SearchIndex>, rusqlite::Error> {
        let data_version: i64 = conn.query_row("PRAGMA data_version", [], |r| r.get(0))?;
        let version = (data_version, conn.total_changes());
        let mut slot = self
            .index
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(index) = slot.as_mut() {
            if index.model.as_deref() == model.map(|m| m.0) && index.dim == model.map_or(0, |m| m.1)
            {
                if index.version == version {
                    return Ok(index.clone());
                }
                // Only while no search holds the snapshot: it is changed in place.
                if let Some(held) = Arc::get_mut(index) {
                    if held.refresh(conn, version)? == Refresh::Applied {
                        return Ok(index.clone());
                    }
                }
            }
        }
        let index = Arc::new(SearchIndex::load(conn, model, version)?);
        *slot = Some(index.clone());
        Ok(index)
    }
}

/// A snapshot of every memory's metadata and of the embeddings from one model, held in
/// memory so searches neither re-read nor re-decode rows; see
/// [`MemoryStore::search_index`].
///
/// The embeddings are a [`VectorMatrix`] (exact and 8-bit-pruned dot products). Built
/// on first use and kept with it: the FTS5 postings ([`SearchIndex::fts`]), the
/// vocabulary ([`SearchIndex::vocab`]) and the filter columns
/// ([`SearchIndex::filter_columns`]).
///
/// Memory at 100k memories × 256 dimensions: ~170 MB once loaded (matrix 100 MB, 8-bit
/// copy 27 MB, metadata), +40 MB of postings, +8 MB vocabulary, +5 MB filter columns.
#[derive(Debug)]
pub struct SearchIndex {
    model: Option<String>,
    /// The model's dimension (0 without a model).
    dim: usize,
    version: (i64, u64),
    rows: Vec<RowMeta>,
    /// Embeddings from `model`, one or more chunk vectors per row, by index into
    /// `rows`.
    vectors: VectorMatrix,
    /// Rows holding at least one vector.
    embedded_rows: usize,
    /// Per row: another memory supersedes it (`memory_links`).
    superseded: Vec<bool>,
    /// Rows marked in `superseded`.
    superseded_rows: usize,
    /// Metadata laid out for filters, built on first use.
    filter_columns: OnceLock<FilterColumns>,
    /// Terms of `memories_vocab`, read on first use.
    vocab: OnceLock<Vocabulary>,
    /// Postings of each [`fts::Table`] (by [`fts::Table::ALL`] position) for this
    /// snapshot, read on first use; the reason when the store's FTS5 data cannot
    /// stand in for `bm25()`.
    fts: [OnceLock<Result<FtsIndex, Unavailable>>; 2],
    /// Whether the store has each [`fts::Table`] (by position), read with the rows
    /// ([`fts::tables`]) so a search asks `sqlite_master` once per snapshot, not per
    /// call. A table another process creates (a writable open upgrading the store
    /// in place) is seen once this connection sees the file change: the next
    /// [`MemoryStore::search_index`] reloads the snapshot ([`SearchIndex::refresh`]
    /// answers [`Refresh::Reload`] when the tables differ).
    tables: [bool; 2],
    /// Newest `memories_changes.seq` this snapshot holds (`None`: the store has no
    /// change log, so a change means a whole reload).
    changes: Option<i64>,
    /// Per row: its sequence ([`SearchIndex::neighbours`]) and `created`.
    sequence: Vec<(Option<Box<str>>, Box<str>)>,
    /// Each row's neighbours in its sequence, built on first use.
    neighbours: OnceLock<Neighbours>,
}

/// Most new memories [`SearchIndex::refresh`] appends; more mean a whole reload.
pub const MAX_REFRESH_ROWS: usize = 1000;

/// What [`SearchIndex::refresh`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refresh {
    /// The index now holds the store's current rows.
    Applied,
    /// The change is not one a refresh handles (rows updated or deleted, more than a
    /// few rows, no change log); the caller reloads whole.
    Reload,
}

/// The rows of a [`SearchIndex`] built outside a store ([`SearchIndex::from_parts`]):
/// the team archive's memories that can rank for one search.
#[derive(Debug, Default)]
pub struct Parts {
    /// Every row's metadata, in the order the rows are numbered (rowids increasing).
    pub rows: Vec<RowMeta>,
    /// Per row: its sequence key ([`SEQUENCE_SQL`]) and `created` (stored text).
    pub sequence: Vec<(Option<Box<str>>, Box<str>)>,
    /// Per row: another memory supersedes it.
    pub superseded: Vec<bool>,
    /// Chunk vectors `(row, values)` of the model, rows increasing.
    pub vectors: Vec<(u32, Vec<f32>)>,
    /// The model (name, dimension) of `vectors`.
    pub model: Option<(String, usize)>,
    /// The postings of each [`fts::Table`] (by position).
    pub fts: [Option<FtsIndex>; 2],
    /// The indexed terms of [`fts::Table::Plain`] (the fuzzy mode's vocabulary).
    pub vocab: Vec<String>,
}

/// The SQL expression (over `memories`, with `memory_links` present) of a memory's
/// sequence ([`Neighbours`]): its linked conversation (the first by target), else its
/// origin file (a JSON Lines memory's `#L<n>` left out), else NULL. Push sends it to
/// the team archive, so the archive's neighbours are the local ones.
pub const SEQUENCE_SQL: &str = "coalesce(\
    (SELECT 'conversation:' || l.target FROM memory_links l \
     WHERE l.id = memories.id AND l.rel = 'conversation' ORDER BY l.target LIMIT 1), \
    CASE WHEN instr(origin, '#L') > 0 THEN 'file:' || substr(origin, 1, instr(origin, '#L') - 1) \
         WHEN instr(origin, '/') > 0 OR instr(origin, '\\') > 0 THEN 'file:' || origin END)";

/// [`SEQUENCE_SQL`] for a store without `memory_links`.
const SEQUENCE_NO_LINKS_SQL: &str = "CASE WHEN instr(origin, '#L') > 0 \
    THEN 'file:' || substr(origin, 1, instr(origin, '#L') - 1) \
    WHEN instr(origin, '/') > 0 OR instr(origin, '\\') > 0 THEN 'file:' || origin END";

/// [`SEQUENCE_SQL`], or its form for a store without `memory_links`.
///
/// # Errors
/// A SQLite error while reading the schema.
pub fn sequence_sql(conn: &Connection) -> Result<&'static str, rusqlite::Error> {
    Ok(if has_links_table(conn)? {
        SEQUENCE_SQL
    } else {
        SEQUENCE_NO_LINKS_SQL
    })
}

impl SearchIndex {
    /// An index over `parts` alone, as a store's snapshot of those rows with those
    /// postings would be: the memo-search legs rank it exactly as they rank a store's
    /// ([`crate::engines`]' memo-search on the team archive). Its FTS5 postings and
    /// vocabulary are `parts`' (a table without postings has an empty index), never
    /// read from a connection.
    #[must_use]
    pub fn from_parts(parts: Parts) -> Self {
        let Parts {
            rows,
            sequence,
            superseded,
            vectors,
            model,
            fts,
            vocab,
        } = parts;
        let mut builder = VectorMatrixBuilder::default();
        let mut embedded_rows = 0;
        let mut last = None;
        for (row, v) in &vectors {
            builder.push(*row, v);
            if last != Some(*row) {
                embedded_rows += 1;
                last = Some(*row);
            }
        }
        let [plain, stem] = fts;
        let n = rows.len();
        let empty = || FtsIndex::builder(vec![None; n], 0, 0).finish();
        let superseded_rows = superseded.iter().filter(|s| **s).count();
        Self {
            dim: model.as_ref().map_or(0, |m| m.1),
            model: model.map(|m| m.0),
            version: (0, 0),
            rows,
            vectors: builder.finish(),
            embedded_rows,
            superseded,
            superseded_rows,
            filter_columns: OnceLock::new(),
            vocab: OnceLock::from(Vocabulary::new(vocab)),
            fts: [
                OnceLock::from(plain.map_or_else(empty, Ok)),
                OnceLock::from(stem.map_or_else(empty, Ok)),
            ],
            tables: [true, true],
            changes: None,
            sequence,
            neighbours: OnceLock::new(),
        }
    }

    fn load(
        conn: &Connection,
        model: Option<(&str, usize)>,
        version: (i64, u64),
    ) -> Result<Self, rusqlite::Error> {
        // One read transaction: the change log's position and the rows agree.
        let tx = if conn.is_autocommit() {
            Some(conn.unchecked_transaction()?)
        } else {
            None
        };
        let changes = change_range(conn)?.map(|(_, newest)| newest);
        let tables = fts::tables(conn)?;
        let dim = model.map_or(0, |m| m.1);
        let model = model.map(|m| m.0);
        let mut index = Self {
            model: model.map(str::to_owned),
            dim,
            version,
            rows: Vec::new(),
            vectors: VectorMatrix::default(),
            embedded_rows: 0,
            superseded: Vec::new(),
            superseded_rows: 0,
            filter_columns: OnceLock::new(),
            vocab: OnceLock::new(),
            fts: [OnceLock::new(), OnceLock::new()],
            tables,
            changes,
            sequence: Vec::new(),
            neighbours: OnceLock::new(),
        };
        let mut vectors = VectorMatrixBuilder::default();
        index.read_rows(conn, "", &mut |row, v| vectors.push(row, v))?;
        index.vectors = vectors.finish();
        index.mark_superseded(conn)?;
        if let Some(tx) = tx {
            tx.commit()?;
        }
        Ok(index)
    }

    /// Appends the rows of `SELECT … FROM memories {filter} ORDER BY rowid` to `rows`,
    /// handing each chunk vector from the index's model to `vector(row, values)`.
    fn read_rows(
        &mut self,
        conn: &Connection,
        filter: &str,
        vector_of: &mut dyn FnMut(u32, &[f32]),
    ) -> Result<(), rusqlite::Error> {
        let dim = self.dim;
        // The sequence ([`Neighbours`]): the linked conversation, else the origin file.
        let sequence = sequence_sql(conn)?;
        let mut stmt = conn.prepare(&format!(
            "SELECT rowid, id, type, updated, files_read, files_modified, \
             CASE WHEN embedding IS NOT NULL AND embedding_model = ?1 THEN embedding END, \
             created, {sequence} \
             FROM memories {filter} ORDER BY rowid"
        ))?;
        let mut vector: Vec<f32> = Vec::new();
        let mut q = stmt.query([self.model.as_deref()])?;
        while let Some(r) = q.next()? {
            let mut files = json_list(&r.get::<_, String>(4)?);
            files.extend(json_list(&r.get::<_, String>(5)?));
            for f in &mut files {
                f.make_ascii_lowercase();
            }
            let i = u32::try_from(self.rows.len()).unwrap_or(u32::MAX);
            if let Some(blob) = r.get_ref(6)?.as_blob_or_null()? {
                // Decoded into one reused buffer: the matrix copies it into its block.
                vector.clear();
                vector.extend(
                    blob.chunks_exact(4)
                        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
                );
                // One vector per chunk; a blob that is not whole vectors of the
                // model's dimension is kept as one (and scores as an odd vector).
                if dim > 0 && !vector.is_empty() && vector.len().is_multiple_of(dim) {
                    for chunk in vector.chunks_exact(dim) {
                        vector_of(i, chunk);
                    }
                } else {
                    vector_of(i, &vector);
                }
                self.embedded_rows += 1;
            }
            self.rows.push(RowMeta {
                rowid: r.get(0)?,
                id: r.get(1)?,
                kind: r.get(2)?,
                updated: r.get(3)?,
                files,
            });
            self.sequence.push((
                r.get::<_, Option<String>>(8)?.map(String::into_boxed_str),
                r.get::<_, String>(7)?.into_boxed_str(),
            ));
        }
        Ok(())
    }

    /// Sets `superseded` from `memory_links` for every row.
    fn mark_superseded(&mut self, conn: &Connection) -> Result<(), rusqlite::Error> {
        let superseded_set = superseded_ids(conn)?;
        self.superseded = self
            .rows
            .iter()
            .map(|m| superseded_set.contains(&m.id))
            .collect();
        self.superseded_rows = self.superseded.iter().filter(|s| **s).count();
        Ok(())
    }

    /// Brings this index to the store's current state (`version`) in place when the
    /// change since it was read is one it can apply: up to [`MAX_REFRESH_ROWS`] new
    /// memories (rowids above every held one; what `memo-save` writes) and any change
    /// of `memory_links`. The new rows' metadata and vectors are appended, the FTS5
    /// postings (when already read) are joined with the new rows' own
    /// ([`fts::load_rows`], [`FtsIndex::append`]): the result equals a whole reload.
    /// Anything else (a row updated or deleted, a trimmed change log, no log, an FTS5
    /// table created or dropped since) answers [`Refresh::Reload`] and leaves the
    /// index as it was.
    ///
    /// # Errors
    /// A SQLite error while reading; the index is then unchanged.
    pub fn refresh(
        &mut self,
        conn: &Connection,
        version: (i64, u64),
    ) -> Result<Refresh, rusqlite::Error> {
        let Some(seen) = self.changes else {
            return Ok(Refresh::Reload);
        };
        // Before the transaction, so it is restored after the transaction ends.
        let _lifted = fts::QueryOnlyLifted::new(conn)?;
        let tx = if conn.is_autocommit() {
            Some(conn.unchecked_transaction()?)
        } else {
            None
        };
        let Some((oldest, newest)) = change_range(conn)? else {
            return Ok(Refresh::Reload);
        };
        if newest < seen || (newest > seen && oldest > seen + 1) {
            return Ok(Refresh::Reload);
        }
        // A store upgraded in place (`memories_stem` created and filled by a writable
        // open) logs no change of `memories`: its tables are compared here.
        if fts::tables(conn)? != self.tables {
            return Ok(Refresh::Reload);
        }
        let mut stmt = conn.prepare_cached(
            "SELECT DISTINCT row FROM memories_changes WHERE seq > ?1 ORDER BY row",
        )?;
        let changed: Vec<i64> = stmt
            .query_map([seen], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        let links_changed = changed.first() == Some(&0);
        let added: Vec<i64> = changed.into_iter().filter(|&r| r != 0).collect();
        let last = self.rows.last().map_or(0, |m| m.rowid);
        if added.len() > MAX_REFRESH_ROWS || added.first().is_some_and(|&r| r <= last) {
            return Ok(Refresh::Reload);
        }
        let first_new = self.rows.len();
        let mut fts_added = [None, None];
        for (slot, table) in fts_added.iter_mut().zip(fts::Table::ALL) {
            if let (Some(Ok(_)), false) = (self.fts[table as usize].get(), added.is_empty()) {
                *slot = Some(fts::load_rows(conn, table, &added)?);
            }
        }
        // Reads done; from here on nothing fails, so the index changes all or not at all.
        let mut new_vectors: Vec<(u32, Vec<f32>)> = Vec::new();
        let before = (self.rows.len(), self.embedded_rows);
        let list = added
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let read = if added.is_empty() {
            Ok(())
        } else {
            self.read_rows(conn, &format!("WHERE rowid IN ({list})"), &mut |row, v| {
                new_vectors.push((row, v.to_vec()));
            })
        };
        let superseded = read.and_then(|()| {
            let set = superseded_ids(conn)?;
            tx.map_or(Ok(()), rusqlite::Transaction::commit)?;
            Ok(set)
        });
        let superseded = match superseded {
            Ok(set) => set,
            Err(e) => {
                self.rows.truncate(before.0);
                self.sequence.truncate(before.0);
                self.embedded_rows = before.1;
                return Err(e);
            }
        };
        for (row, v) in &new_vectors {
            self.vectors.push(*row, v);
        }
        if links_changed || self.rows.len() > first_new {
            self.superseded = self
                .rows
                .iter()
                .map(|m| superseded.contains(&m.id))
                .collect();
            self.superseded_rows = self.superseded.iter().filter(|s| **s).count();
        }
        if self.rows.len() > first_new {
            if let Some(columns) = self.filter_columns.get_mut() {
                for i in first_new..self.rows.len() {
                    columns.push(&self.rows, i);
                }
            }
            self.vocab = OnceLock::new();
            self.neighbours = OnceLock::new();
            for (slot, added) in self.fts.iter_mut().zip(fts_added) {
                *slot = match (slot.take(), added) {
                    (Some(Ok(base)), Some(Ok((more, n_rows, n_tokens))))
                        if more.rows() == self.rows.len() - first_new =>
                    {
                        match base.append(&more, n_rows, n_tokens) {
                            Ok(joined) => OnceLock::from(Ok(joined)),
                            Err(_) => OnceLock::new(),
                        }
                    }
                    // Read again on next use.
                    _ => OnceLock::new(),
                };
            }
        }
        self.changes = Some(newest);
        self.version = version;
        Ok(Refresh::Applied)
    }

    /// The in-memory postings of `memories_fts` ([`FtsIndex`]: FTS5's `bm25()` without
    /// SQLite), read through `conn` (this store's connection) on first use and kept
    /// with the index. `None` when they cannot stand in for SQLite: the file changed
    /// since this index was loaded (the next search reloads both), or its FTS5 data
    /// fails the index's guards. Costs ~1.2 s at 100k memories (SQLite walking the
    /// `instance` table), once; holds ~40 MB there.
    ///
    /// # Errors
    /// A SQLite error while reading.
    pub fn fts(&self, conn: &Connection) -> Result<Option<&FtsIndex>, rusqlite::Error> {
        self.fts_of(conn, fts::Table::Plain)
    }

    /// As [`SearchIndex::fts`], for either [`fts::Table`]; `None` too when the store
    /// lacks the table (a store not opened writable since `memories_stem` came:
    /// [`SearchIndex::has_table`]).
    ///
    /// # Errors
    /// A SQLite error while reading.
    pub fn fts_of(
        &self,
        conn: &Connection,
        table: fts::Table,
    ) -> Result<Option<&FtsIndex>, rusqlite::Error> {
        let slot = &self.fts[table as usize];
        if let Some(built) = slot.get() {
            return Ok(built.as_ref().ok());
        }
        if !self.has_table(table) {
            return Ok(None);
        }
        // One read transaction, so postings, lengths and totals are one snapshot.
        let tx = if conn.is_autocommit() {
            Some(conn.unchecked_transaction()?)
        } else {
            None
        };
        conn.query_row(
            &format!("SELECT count(*) FROM {}_config", table.name()),
            [],
            |_| Ok(()),
        )?;
        let data_version: i64 = conn.query_row("PRAGMA data_version", [], |r| r.get(0))?;
        if (data_version, conn.total_changes()) != self.version {
            return Ok(None);
        }
        let rowids: Vec<i64> = self.rows.iter().map(|m| m.rowid).collect();
        let built = fts::load(conn, table, &rowids)?;
        if let Some(tx) = tx {
            tx.commit()?;
        }
        Ok(slot.get_or_init(|| built).as_ref().ok())
    }

    /// Whether the store had `table` when this snapshot was read (a store last written
    /// before `memories_stem` existed, opened read-only, has not); see the field's
    /// note on tables created by another process.
    pub fn has_table(&self, table: fts::Table) -> bool {
        self.tables[table as usize]
    }

    /// The indexed FTS5 terms (`SELECT term FROM memories_vocab`, in its order,
    /// prepared for edit-distance lookups), read through `conn` (this store's
    /// connection) on first use and kept with the index.
    ///
    /// # Errors
    /// A SQLite error while reading the vocabulary.
    pub fn vocab(&self, conn: &Connection) -> Result<&Vocabulary, rusqlite::Error> {
        if let Some(v) = self.vocab.get() {
            return Ok(v);
        }
        let mut stmt = conn.prepare("SELECT term FROM memories_vocab")?;
        let terms = stmt
            .query_map([], |r| r.get::<_, String>(0))?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(self.vocab.get_or_init(|| Vocabulary::new(terms)))
    }

    /// Every memory, in rowid order.
    pub fn rows(&self) -> &[RowMeta] {
        &self.rows
    }

    /// Each row's neighbours in its sequence ([`Neighbours`]), built on first use.
    pub fn neighbours(&self) -> &Neighbours {
        self.neighbours
            .get_or_init(|| Neighbours::build(&self.sequence))
    }

    /// The rows' metadata laid out for filters, built on first use (~40 ms at 100k).
    pub fn filter_columns(&self) -> &FilterColumns {
        self.filter_columns
            .get_or_init(|| FilterColumns::new(&self.rows))
    }

    /// Index in [`SearchIndex::rows`] of `rowid`, if stored.
    pub fn position(&self, rowid: i64) -> Option<usize> {
        // Rowids are usually dense from the first one: try that slot first.
        let guess = self
            .rows
            .first()
            .and_then(|f| usize::try_from(rowid - f.rowid).ok());
        if let Some(g) = guess.filter(|&g| self.rows.get(g).is_some_and(|m| m.rowid == rowid)) {
            return Some(g);
        }
        self.rows.binary_search_by_key(&rowid, |m| m.rowid).ok()
    }

    /// True when another memory supersedes row `i` (an index into
    /// [`SearchIndex::rows`]).
    pub fn is_superseded(&self, i: usize) -> bool {
        self.superseded.get(i).copied().unwrap_or(false)
    }

    /// Number of superseded rows.
    pub fn superseded_rows(&self) -> usize {
        self.superseded_rows
    }

    /// Number of memories holding an embedding from the index's model.
    pub fn embedded(&self) -> usize {
        self.embedded_rows
    }

    /// Number of chunk vectors held (≥ [`SearchIndex::embedded`]: a long memory has
    /// one per chunk).
    pub fn chunk_vectors(&self) -> usize {
        self.vectors.len()
    }

    /// The embeddings of the index's model ([`VectorMatrix`]), by row index.
    pub fn vectors(&self) -> &VectorMatrix {
        &self.vectors
    }

    /// [`VectorMatrix::for_each_top_row_dot`] over this index's embeddings: every
    /// chunk vector needed to rank the `n` best memories by their best chunk (row
    /// indexes into [`SearchIndex::rows`]).
    pub fn for_each_top_dot(
        &self,
        q: &[f32],
        n: usize,
        keep: impl Fn(usize) -> bool,
        f: impl FnMut(usize, f32),
    ) -> usize {
        self.vectors
            .for_each_top_row_dot(q, n, self.rows.len(), keep, f)
    }

    /// [`VectorMatrix::for_each_dot`] over this index's embeddings.
    pub fn for_each_dot(&self, q: &[f32], keep: impl Fn(usize) -> bool, f: impl FnMut(usize, f32)) {
        self.vectors.for_each_dot(q, keep, f);
    }
}
