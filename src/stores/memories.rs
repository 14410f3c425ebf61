//! SQLite store of durable memories (decisions, facts, bugs, preferences…).
//!
//! Schema (one file, `memories.sqlite`):
//! - `memories`: one row per memory, keyed by a stable text `id`; `tags`, `files_read`
//!   and `files_modified` are JSON arrays of strings; `created`/`updated` are UTC times
//!   as fixed-width text `YYYY-MM-DDTHH:MM:SSZ` (so text comparison is time order);
//!   `embedding` is an optional little-endian `f32` vector, L2-normalised, produced by
//!   the model named in `embedding_model`.
//! - `memories_fts`: FTS5 over `title`, `tags`, `body` with
//!   `tokenize = 'unicode61 remove_diacritics 2'` (accents fold: "decisión" finds
//!   "decision"); its rowid is the `memories` rowid.
//! - `memories_vocab`: an `fts5vocab` `row` table over `memories_fts`, used by the fuzzy
//!   mode to find indexed terms near a typo.
//! - per connection, not in the file: `temp.memories_fts_instance`, an `fts5vocab`
//!   `instance` table from which [`fts::FtsIndex`] copies the postings.
//!
//! Engines open the store with [`MemoryStore::open_ro`] (SQLite read-only flags plus
//! `PRAGMA query_only`): a search never changes the file. Writers use
//! [`MemoryStore::open_rw`] and [`MemoryStore::upsert`]; re-inserting an unchanged
//! memory is a no-op, so imports are idempotent.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use chrono::{DateTime, Utc};
use rusqlite::{params, Connection, OpenFlags, OptionalExtension};
use sha2::{Digest, Sha256};

use super::StoreError;

pub mod filter_columns;
pub mod fts;
pub mod quantized;
pub mod vocabulary;

use fts::FtsIndex;
use quantized::Quantized;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS memories (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    title TEXT NOT NULL,
    type TEXT NOT NULL,
    tags TEXT NOT NULL,
    created TEXT NOT NULL,
    updated TEXT NOT NULL,
    body TEXT NOT NULL,
    files_read TEXT NOT NULL,
    files_modified TEXT NOT NULL,
    origin TEXT,
    content_hash TEXT NOT NULL,
    embedding BLOB,
    embedding_model TEXT
);
CREATE INDEX IF NOT EXISTS memories_updated ON memories(updated);
CREATE INDEX IF NOT EXISTS memories_type ON memories(type);
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(
    title, tags, body, tokenize = 'unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE IF NOT EXISTS memories_vocab USING fts5vocab(memories_fts, 'row');
";

/// Format of stored times: fixed width, UTC, second precision.
pub const TIME_FORMAT: &str = "%Y-%m-%dT%H:%M:%SZ";

/// Formats a time the way the store keeps it (`YYYY-MM-DDTHH:MM:SSZ`).
pub fn format_time(t: &DateTime<Utc>) -> String {
    t.format(TIME_FORMAT).to_string()
}

/// One memory as stored (without its embedding).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Memory {
    /// Stable id (see [`Memory::stable_id`]).
    pub id: String,
    /// Short title.
    pub title: String,
    /// Free-form type, lowercased: `decision`, `fact`, `bug`, `feedback`, `note`…
    #[serde(rename = "type")]
    pub kind: String,
    /// Tags, in source order, without duplicates.
    pub tags: Vec<String>,
    /// Creation time, UTC (second precision).
    pub created: DateTime<Utc>,
    /// Last update time, UTC (second precision); date filters apply to this.
    pub updated: DateTime<Utc>,
    /// Markdown body.
    pub body: String,
    /// Paths the memory's author read when capturing it.
    pub files_read: Vec<String>,
    /// Paths the memory's author modified when capturing it.
    pub files_modified: Vec<String>,
    /// Where the memory came from (file path, optionally `#section`), when imported.
    pub origin: Option<String>,
}

impl Memory {
    /// A stable id from a key (an origin path, or title and body): `m-` plus the first
    /// 16 hex digits of its SHA-256. Never salted, never time-based.
    pub fn stable_id(key: &str) -> String {
        let digest = Sha256::digest(key.as_bytes());
        let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
        format!("m-{hex}")
    }

    /// Text the embedding is computed from: title, tags and body.
    pub fn embedding_text(&self) -> String {
        format!("{}\n{}\n{}", self.title, self.tags.join(" "), self.body)
    }

    fn content_hash(&self) -> String {
        let mut h = Sha256::new();
        for part in [&self.title, &self.kind, &self.body] {
            h.update(part.as_bytes());
            h.update([0u8]);
        }
        for list in [&self.tags, &self.files_read, &self.files_modified] {
            for item in list {
                h.update(item.as_bytes());
                h.update([1u8]);
            }
            h.update([0u8]);
        }
        h.update(format_time(&self.created).as_bytes());
        h.update(format_time(&self.updated).as_bytes());
        h.update(self.origin.as_deref().unwrap_or("").as_bytes());
        h.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// What [`MemoryStore::upsert`] did with one memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Upsert {
    /// The id was new; the memory was inserted.
    Inserted,
    /// The id existed with different content; the row was replaced.
    Updated,
    /// The id existed with identical content; nothing changed.
    Unchanged,
}

/// A memory's embedding as read back for vector search.
#[derive(Debug, Clone)]
pub struct StoredEmbedding {
    /// Row id in `memories` (join key with FTS results).
    pub rowid: i64,
    /// The vector (L2-normalised when written by [`MemoryStore::set_embedding`]).
    pub vector: Vec<f32>,
}

/// A SQLite database file holding memories; see the module docs for the schema.
///
/// The connection sits behind a mutex so one store can be shared by engine calls on
/// several threads.
pub struct MemoryStore {
    path: PathBuf,
    conn: Mutex<Connection>,
    read_only: bool,
    index: Mutex<Option<Arc<SearchIndex>>>,
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore")
            .field("path", &self.path)
            .field("read_only", &self.read_only)
            .finish()
    }
}

impl MemoryStore {
    /// Opens (creating the file, its folder and the schema when missing) a writable store.
    ///
    /// # Errors
    /// [`StoreError::Io`] when the folder cannot be created, [`StoreError::Sqlite`] when
    /// the file is not a SQLite database or the schema cannot be created.
    pub fn open_rw(path: &Path) -> Result<Self, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs_err::create_dir_all(dir)?;
        }
        let conn = Connection::open(path).map_err(|e| sqlite_error(path, e))?;
        let store = Self {
            path: path.to_path_buf(),
            conn: Mutex::new(conn),
            read_only: false,
            index: Mutex::new(None),
        };
        store.init()?;
        Ok(store)
    }

    /// Opens an existing store read-only: SQLite's read-only open flag plus
    /// `PRAGMA query_only = 1`. Nothing this handle does can change the file.
    ///
    /// # Errors
    /// [`StoreError::Missing`] when the file does not exist (nothing imported yet),
    /// [`StoreError::Sqlite`] when it is not a memories store.
    pub fn open_ro(path: &Path) -> Result<Self, StoreError> {
        if !path.exists() {
            return Err(StoreError::Missing(path.to_path_buf()));
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI;
        let conn = Connection::open_with_flags(path, flags).map_err(|e| sqlite_error(path, e))?;
        // Temp schema only (never the file), and before `query_only`, which refuses it.
        conn.execute_batch(fts::CREATE_INSTANCE_TABLE)
            .map_err(|e| sqlite_error(path, e))?;
        conn.pragma_update(None, "query_only", 1)
            .map_err(|e| sqlite_error(path, e))?;
        conn.query_row(
            "SELECT count(*) FROM memories_fts WHERE rowid = 0",
            [],
            |_| Ok(()),
        )
        .map_err(|e| sqlite_error(path, e))?;
        Ok(Self {
            path: path.to_path_buf(),
            conn: Mutex::new(conn),
            read_only: true,
            index: Mutex::new(None),
        })
    }

    /// A writable store in memory (tests, examples).
    ///
    /// # Errors
    /// [`StoreError::Sqlite`] if SQLite cannot create the schema.
    pub fn open_in_memory() -> Result<Self, StoreError> {
        let path = PathBuf::from(":memory:");
        let conn = Connection::open_in_memory().map_err(|e| sqlite_error(&path, e))?;
        let store = Self {
            path,
            conn: Mutex::new(conn),
            read_only: false,
            index: Mutex::new(None),
        };
        store.init()?;
        Ok(store)
    }

    fn init(&self) -> Result<(), StoreError> {
        let conn = self.lock();
        conn.execute_batch(SCHEMA).map_err(|e| self.error(e))?;
        conn.execute_batch(fts::CREATE_INSTANCE_TABLE)
            .map_err(|e| self.error(e))
    }

    /// The database file (`:memory:` for in-memory stores).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// True when opened with [`MemoryStore::open_ro`].
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// The connection, locked. A poisoned lock is recovered: SQLite keeps its own
    /// consistency, so a panic elsewhere cannot leave the connection half-written.
    pub fn lock(&self) -> MutexGuard<'_, Connection> {
        self.conn
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The in-memory [`SearchIndex`] of this store for embeddings from `model` (none
    /// when `None`), built on first use and kept until the file changes (another
    /// connection committed, per `PRAGMA data_version`, or this one wrote). `conn` is
    /// this store's connection, already locked by the caller. Only reads.
    ///
    /// # Errors
    /// A SQLite error while reading the rows.
    pub fn search_index(
        &self,
        conn: &Connection,
        model: Option<&str>,
    ) -> Result<Arc<SearchIndex>, rusqlite::Error> {
        let data_version: i64 = conn.query_row("PRAGMA data_version", [], |r| r.get(0))?;
        let version = (data_version, conn.total_changes());
        let mut slot = self
            .index
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(index) = slot.as_ref() {
            if index.version == version && index.model.as_deref() == model {
                return Ok(index.clone());
            }
        }
        let index = Arc::new(SearchIndex::load(conn, model, version)?);
        *slot = Some(index.clone());
        Ok(index)
    }

    /// Wraps a SQLite error with this store's path.
    pub fn error(&self, source: rusqlite::Error) -> StoreError {
        sqlite_error(&self.path, source)
    }

    /// Inserts or replaces `memory` by its id; identical content is left untouched.
    ///
    /// A changed memory loses its stored embedding (it no longer matches the text).
    ///
    /// # Errors
    /// [`StoreError::Sqlite`] on a write failure (for example a read-only store).
    pub fn upsert(&self, memory: &Memory) -> Result<Upsert, StoreError> {
        let hash = memory.content_hash();
        let mut conn = self.lock();
        let tx = conn.transaction().map_err(|e| self.error(e))?;
        let existing: Option<(i64, String)> = tx
            .query_row(
                "SELECT rowid, content_hash FROM memories WHERE id = ?1",
                [&memory.id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(|e| self.error(e))?;
        let json = |v: &Vec<String>| serde_json::to_string(v).unwrap_or_else(|_| "[]".into());
        let (outcome, rowid) = match existing {
            Some((_, old)) if old == hash => (Upsert::Unchanged, None),
            Some((rowid, _)) => {
                tx.execute(
                    "UPDATE memories SET title=?2, type=?3, tags=?4, created=?5, updated=?6, body=?7, \
                     files_read=?8, files_modified=?9, origin=?10, content_hash=?11, embedding=NULL, \
                     embedding_model=NULL WHERE rowid=?1",
                    params![
                        rowid,
                        memory.title,
                        memory.kind,
                        json(&memory.tags),
                        format_time(&memory.created),
                        format_time(&memory.updated),
                        memory.body,
                        json(&memory.files_read),
                        json(&memory.files_modified),
                        memory.origin,
                        hash
                    ],
                )
                .map_err(|e| self.error(e))?;
                tx.execute("DELETE FROM memories_fts WHERE rowid = ?1", [rowid])
                    .map_err(|e| self.error(e))?;
                (Upsert::Updated, Some(rowid))
            }
            None => {
                tx.execute(
                    "INSERT INTO memories(id, title, type, tags, created, updated, body, files_read, \
                     files_modified, origin, content_hash) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                    params![
                        memory.id,
                        memory.title,
                        memory.kind,
                        json(&memory.tags),
                        format_time(&memory.created),
                        format_time(&memory.updated),
                        memory.body,
                        json(&memory.files_read),
                        json(&memory.files_modified),
                        memory.origin,
                        hash
                    ],
                )
                .map_err(|e| self.error(e))?;
                (Upsert::Inserted, Some(tx.last_insert_rowid()))
            }
        };
        // New and changed memories get their full-text row (re)written the same way.
        if let Some(rowid) = rowid {
            tx.execute(
                "INSERT INTO memories_fts(rowid, title, tags, body) VALUES (?1, ?2, ?3, ?4)",
                params![rowid, memory.title, memory.tags.join(" "), memory.body],
            )
            .map_err(|e| self.error(e))?;
        }
        tx.commit().map_err(|e| self.error(e))?;
        Ok(outcome)
    }

    /// Stores `vector` (L2-normalised here) as the embedding of memory `id`, produced by
    /// model `model`. Returns false when no memory has that id.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`] on a write failure.
    pub fn set_embedding(&self, id: &str, vector: &[f32], model: &str) -> Result<bool, StoreError> {
        let blob = encode_vector(&normalized(vector));
        let n = self
            .lock()
            .execute(
                "UPDATE memories SET embedding = ?2, embedding_model = ?3 WHERE id = ?1",
                params![id, blob, model],
            )
            .map_err(|e| self.error(e))?;
        Ok(n > 0)
    }

    /// Ids and embedding texts of memories lacking an embedding from `model`.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`] on a read failure.
    pub fn missing_embeddings(&self, model: &str) -> Result<Vec<(String, String)>, StoreError> {
        let conn = self.lock();
        let mut stmt = conn
            .prepare(
                "SELECT id, title, tags, body FROM memories \
                 WHERE embedding IS NULL OR embedding_model IS NOT ?1 ORDER BY rowid",
            )
            .map_err(|e| self.error(e))?;
        let rows = stmt
            .query_map([model], |r| {
                let tags: Vec<String> =
                    serde_json::from_str(&r.get::<_, String>(2)?).unwrap_or_default();
                Ok((
                    r.get::<_, String>(0)?,
                    format!(
                        "{}\n{}\n{}",
                        r.get::<_, String>(1)?,
                        tags.join(" "),
                        r.get::<_, String>(3)?
                    ),
                ))
            })
            .map_err(|e| self.error(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.error(e))?;
        Ok(rows)
    }

    /// Number of memories stored.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`] on a read failure.
    pub fn count(&self) -> Result<usize, StoreError> {
        let n: i64 = self
            .lock()
            .query_row("SELECT count(*) FROM memories", [], |r| r.get(0))
            .map_err(|e| self.error(e))?;
        Ok(usize::try_from(n).unwrap_or(0))
    }

    /// Number of memories holding an embedding from `model`.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`] on a read failure.
    pub fn count_embedded(&self, model: &str) -> Result<usize, StoreError> {
        let n: i64 = self
            .lock()
            .query_row("SELECT count(*) FROM memories WHERE embedding IS NOT NULL AND embedding_model = ?1", [model], |r| {
                r.get(0)
            })
            .map_err(|e| self.error(e))?;
        Ok(usize::try_from(n).unwrap_or(0))
    }

    /// Reads one memory by id.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`] on a read failure.
    pub fn get(&self, id: &str) -> Result<Option<Memory>, StoreError> {
        let conn = self.lock();
        conn.query_row(
            "SELECT id, title, type, tags, created, updated, body, files_read, files_modified, origin \
             FROM memories WHERE id = ?1",
            [id],
            |r| {
                Ok(Memory {
                    id: r.get(0)?,
                    title: r.get(1)?,
                    kind: r.get(2)?,
                    tags: json_list(&r.get::<_, String>(3)?),
                    created: parse_time(&r.get::<_, String>(4)?),
                    updated: parse_time(&r.get::<_, String>(5)?),
                    body: r.get(6)?,
                    files_read: json_list(&r.get::<_, String>(7)?),
                    files_modified: json_list(&r.get::<_, String>(8)?),
                    origin: r.get(9)?,
                })
            },
        )
        .optional()
        .map_err(|e| self.error(e))
    }
}

/// Rows per block of the vector matrix: a block holds its rows' vectors dimension by
/// dimension, so one pass over a block computes this many dot products side by side.
pub const LANES: usize = 16;

/// Per-row metadata used by search filters and tie-breaks.
#[derive(Debug, Clone)]
pub struct RowMeta {
    /// Row id in `memories`.
    pub rowid: i64,
    /// Stable id.
    pub id: String,
    /// Type, as stored.
    pub kind: String,
    /// `updated`, as stored text.
    pub updated: String,
    /// Paths of `files_read` then `files_modified`, ASCII-lowercased (as SQLite's
    /// `lower()` folds them).
    pub files: Vec<String>,
}

/// A snapshot of every memory's metadata and of the embeddings from one model, held in
/// memory so searches neither re-read nor re-decode rows; see
/// [`MemoryStore::search_index`].
///
/// Vectors of the common dimension sit in one contiguous matrix of blocks of
/// [`LANES`] rows, stored dimension-major inside a block; a dot product is accumulated
/// in the same order as [`crate::stores::embedder::cosine`], so scores are identical.
/// An 8-bit copy of the matrix ([`quantized::Quantized`]) serves the first pass of
/// [`SearchIndex::for_each_top_dot`]. Built on first use and kept with it: the FTS5
/// postings ([`SearchIndex::fts`]), the vocabulary ([`SearchIndex::vocab`]) and the
/// filter columns ([`SearchIndex::filter_columns`]).
///
/// Memory at 100k memories × 256 dimensions: ~170 MB once loaded (matrix 100 MB, 8-bit
/// copy 27 MB, metadata), +40 MB of postings, +8 MB vocabulary, +5 MB filter columns.
#[derive(Debug)]
pub struct SearchIndex {
    model: Option<String>,
    version: (i64, u64),
    rows: Vec<RowMeta>,
    dim: usize,
    /// Index into `rows` of each matrix slot.
    slots: Vec<u32>,
    matrix: Vec<f32>,
    /// Embeddings whose length differs from `dim`: `(row index, vector)`.
    odd: Vec<(u32, Vec<f32>)>,
    /// 8-bit copy of `matrix`, slot by slot, for the first pass of
    /// [`SearchIndex::for_each_top_dot`]; `None` when a vector cannot be bounded.
    quantized: Option<Quantized>,
    /// Metadata laid out for filters, built on first use.
    filter_columns: OnceLock<filter_columns::FilterColumns>,
    /// Terms of `memories_vocab`, read on first use.
    vocab: OnceLock<vocabulary::Vocabulary>,
    /// Postings of `memories_fts` for this snapshot, read on first use; the reason
    /// when the store's FTS5 data cannot stand in for `bm25()`.
    fts: OnceLock<Result<FtsIndex, fts::Unavailable>>,
}

impl SearchIndex {
    fn load(
        conn: &Connection,
        model: Option<&str>,
        version: (i64, u64),
    ) -> Result<Self, rusqlite::Error> {
        let mut stmt = conn.prepare(
            "SELECT rowid, id, type, updated, files_read, files_modified, \
             CASE WHEN embedding IS NOT NULL AND embedding_model = ?1 THEN embedding END \
             FROM memories ORDER BY rowid",
        )?;
        let mut rows = Vec::new();
        // The first stored vector (in rowid order) sets the matrix dimension; vectors
        // are decoded straight into their block, so no per-row copy is kept.
        let mut dim: Option<usize> = None;
        let mut slots: Vec<u32> = Vec::new();
        let mut matrix: Vec<f32> = Vec::new();
        let mut odd = Vec::new();
        let mut quantized: Option<Option<Quantized>> = None;
        let mut vector: Vec<f32> = Vec::new();
        let mut q = stmt.query([model])?;
        while let Some(r) = q.next()? {
            let mut files = json_list(&r.get::<_, String>(4)?);
            files.extend(json_list(&r.get::<_, String>(5)?));
            for f in &mut files {
                f.make_ascii_lowercase();
            }
            let i = u32::try_from(rows.len()).unwrap_or(u32::MAX);
            if let Some(blob) = r.get_ref(6)?.as_blob_or_null()? {
                let len = blob.len() / 4;
                let d = *dim.get_or_insert(len);
                if len == d && d > 0 {
                    let (b, lane) = (slots.len() / LANES, slots.len() % LANES);
                    if lane == 0 {
                        matrix.resize((b + 1) * d * LANES, 0.0);
                    }
                    let base = b * d * LANES;
                    vector.clear();
                    vector.extend(
                        blob.chunks_exact(4)
                            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
                    );
                    for (k, &x) in vector.iter().enumerate() {
                        matrix[base + k * LANES + lane] = x;
                    }
                    let copy = quantized.get_or_insert_with(|| Quantized::new(d));
                    if copy.as_mut().is_some_and(|c| !c.push(&vector)) {
                        *copy = None;
                    }
                    slots.push(i);
                } else {
                    odd.push((i, decode_vector(blob)));
                }
            }
            rows.push(RowMeta {
                rowid: r.get(0)?,
                id: r.get(1)?,
                kind: r.get(2)?,
                updated: r.get(3)?,
                files,
            });
        }
        let dim = dim.unwrap_or(0);
        let mut quantized = quantized.flatten();
        if let Some(q) = quantized.as_mut() {
            q.shrink_to_fit();
        }
        Ok(Self {
            model: model.map(str::to_owned),
            version,
            rows,
            dim,
            slots,
            matrix,
            odd,
            quantized,
            filter_columns: OnceLock::new(),
            vocab: OnceLock::new(),
            fts: OnceLock::new(),
        })
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
        if let Some(built) = self.fts.get() {
            return Ok(built.as_ref().ok());
        }
        // One read transaction, so postings, lengths and totals are one snapshot.
        let tx = if conn.is_autocommit() {
            Some(conn.unchecked_transaction()?)
        } else {
            None
        };
        conn.query_row("SELECT count(*) FROM memories_fts_config", [], |_| Ok(()))?;
        let data_version: i64 = conn.query_row("PRAGMA data_version", [], |r| r.get(0))?;
        if (data_version, conn.total_changes()) != self.version {
            return Ok(None);
        }
        let rowids: Vec<i64> = self.rows.iter().map(|m| m.rowid).collect();
        let built = FtsIndex::load(conn, &rowids)?;
        if let Some(tx) = tx {
            tx.commit()?;
        }
        Ok(self.fts.get_or_init(|| built).as_ref().ok())
    }

    /// The indexed FTS5 terms (`SELECT term FROM memories_vocab`, in its order,
    /// prepared for edit-distance lookups), read through `conn` (this store's
    /// connection) on first use and kept with the index.
    ///
    /// # Errors
    /// A SQLite error while reading the vocabulary.
    pub fn vocab(&self, conn: &Connection) -> Result<&vocabulary::Vocabulary, rusqlite::Error> {
        if let Some(v) = self.vocab.get() {
            return Ok(v);
        }
        let mut stmt = conn.prepare("SELECT term FROM memories_vocab")?;
        let terms = stmt
            .query_map([], |r| r.get::<_, String>(0))?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(self
            .vocab
            .get_or_init(|| vocabulary::Vocabulary::new(terms)))
    }

    /// Every memory, in rowid order.
    pub fn rows(&self) -> &[RowMeta] {
        &self.rows
    }

    /// The rows' metadata laid out for filters, built on first use (~40 ms at 100k).
    pub fn filter_columns(&self) -> &filter_columns::FilterColumns {
        self.filter_columns
            .get_or_init(|| filter_columns::FilterColumns::new(&self.rows))
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

    /// Number of memories holding an embedding from the index's model.
    pub fn embedded(&self) -> usize {
        self.slots.len() + self.odd.len()
    }

    /// Calls `f(row index, dot product)` for every embedded memory whose row index
    /// passes `keep` that can be among the `n` largest dot products with `q`, and
    /// returns how many embedded memories pass `keep`. Dot products are exact (as in
    /// [`SearchIndex::for_each_dot`]). A memory left out is strictly below at least `n`
    /// reported ones, whose n-th best lies in (0, 1], so the order of dot products
    /// clamped to [0, 1] (cosines) keeps it out as well.
    ///
    /// How: a first pass over the 8-bit copy of the matrix (a quarter of its bytes;
    /// [`quantized`]) gives each memory an interval holding its dot product; memories
    /// whose interval reaches the n-th best lower end are then computed exactly,
    /// highest upper end first, until the next upper end is below the n-th best exact
    /// value (~100–200 of 100k for n = 10–20). Falls back to the whole exact pass when
    /// there is no 8-bit copy, the query is zero, or that bound cannot be proven.
    pub fn for_each_top_dot(
        &self,
        q: &[f32],
        n: usize,
        keep: impl Fn(usize) -> bool,
        mut f: impl FnMut(usize, f32),
    ) -> usize {
        let Some((kept, exact)) = self.top_dots(q, n, &keep) else {
            let mut kept = 0;
            self.for_each_dot(q, &keep, |i, d| {
                kept += 1;
                f(i, d);
            });
            return kept;
        };
        for (row, dot) in exact {
            f(row, dot);
        }
        let mut kept = kept;
        for (r, v) in &self.odd {
            if keep(*r as usize) {
                kept += 1;
                f(*r as usize, crate::stores::embedder::cosine(q, v));
            }
        }
        kept
    }

    /// The pruned exact pass of [`SearchIndex::for_each_top_dot`] over the matrix
    /// slots: `(memories kept, (row, exact dot) of those that can be in the top n)`;
    /// `None` when pruning cannot be proven.
    fn top_dots(
        &self,
        q: &[f32],
        n: usize,
        keep: &impl Fn(usize) -> bool,
    ) -> Option<(usize, Vec<(usize, f32)>)> {
        let quant = self.quantized.as_ref()?;
        let query = quant.query(q)?;
        if n == 0 {
            return None;
        }
        // `lows`: the largest lower ends so far, cut back to the n largest when it
        // doubles, so `theta`, their n-th largest, only grows. `candidates`: (upper
        // end, slot) of the slots whose upper end reached `theta` when seen.
        let mut lows: Vec<f64> = Vec::with_capacity(2 * n);
        let mut theta = f64::NEG_INFINITY;
        let mut candidates: Vec<(f64, u32)> = Vec::new();
        let mut kept = 0;
        let keep_slot = |slot: usize| keep(self.slots[slot] as usize);
        quant.scan(&query, keep_slot, |slot, low, high| {
            kept += 1;
            if high >= theta {
                candidates.push((high, u32::try_from(slot).unwrap_or(u32::MAX)));
            }
            if low > theta {
                lows.push(low);
                if lows.len() == 2 * n {
                    theta = nth_largest(&mut lows, n);
                }
            }
        });
        // The n-th largest lower end of all: every slot whose upper end is below it
        // has n slots surely above it.
        let theta = if lows.len() >= n {
            nth_largest(&mut lows, n)
        } else {
            f64::NEG_INFINITY
        };
        candidates.retain(|c| c.0 >= theta);
        candidates.sort_unstable_by(|a, b| b.0.total_cmp(&a.0));
        let complete = candidates.len() == kept;
        // Exact values, highest upper end first; `best` holds the n largest so far.
        let mut best: std::collections::BinaryHeap<std::cmp::Reverse<i64>> =
            std::collections::BinaryHeap::with_capacity(n + 1);
        let mut exact = Vec::new();
        let mut stopped = false;
        for (high, slot) in candidates {
            if best.len() == n {
                let nth = best.peek().map_or(f64::NAN, |k| from_total_key(k.0));
                if high < nth && nth > 0.0 && nth <= 1.0 {
                    stopped = true;
                    break;
                }
            }
            let slot = slot as usize;
            let dot = self.exact_dot(q, slot);
            exact.push((self.slots[slot] as usize, dot));
            best.push(std::cmp::Reverse(total_key(f64::from(dot))));
            if best.len() > n {
                best.pop();
            }
        }
        if !stopped && !complete {
            // Every candidate was computed; the slots below `theta` stay out only if
            // the n-th best exact value (≥ theta) is in (0, 1].
            let nth = if best.len() == n {
                best.peek().map_or(f64::NAN, |k| from_total_key(k.0))
            } else {
                f64::NAN
            };
            if !(nth > 0.0 && nth <= 1.0) {
                return None;
            }
        }
        Some((kept, exact))
    }

    /// Slot `slot`'s dot product with `q` (of length `dim`), summed exactly as one lane
    /// of [`SearchIndex::for_each_dot`].
    fn exact_dot(&self, q: &[f32], slot: usize) -> f32 {
        let (block, lane) = (slot / LANES, slot % LANES);
        let column = &self.matrix[block * self.dim * LANES + lane..];
        let mut acc = -0.0f32;
        for (d, qd) in q.iter().enumerate() {
            acc += qd * column[d * LANES];
        }
        acc
    }

    /// Calls `f(row index, dot product)` for every embedded memory whose row index
    /// passes `keep`. The dot product equals [`crate::stores::embedder::cosine`] of
    /// `q` and the stored vector, bit for bit.
    pub fn for_each_dot(
        &self,
        q: &[f32],
        keep: impl Fn(usize) -> bool,
        mut f: impl FnMut(usize, f32),
    ) {
        let dim = self.dim;
        if dim > 0 {
            for (b, block) in self.matrix.chunks_exact(dim * LANES).enumerate() {
                let first = b * LANES;
                let lanes = (self.slots.len() - first).min(LANES);
                let rows = &self.slots[first..first + lanes];
                if !rows.iter().any(|&r| keep(r as usize)) {
                    continue;
                }
                if q.len() == dim {
                    // -0.0 is the start of `Iterator::sum` for floats.
                    let mut acc = [-0.0f32; LANES];
                    for (qd, col) in q.iter().zip(block.chunks_exact(LANES)) {
                        for l in 0..LANES {
                            acc[l] += qd * col[l];
                        }
                    }
                    for (l, &r) in rows.iter().enumerate() {
                        if keep(r as usize) {
                            f(r as usize, acc[l]);
                        }
                    }
                } else {
                    for &r in rows {
                        if keep(r as usize) {
                            f(r as usize, 0.0);
                        }
                    }
                }
            }
        }
        for (r, v) in &self.odd {
            if keep(*r as usize) {
                f(*r as usize, crate::stores::embedder::cosine(q, v));
            }
        }
    }
}

/// An `i64` ordered as `f64::total_cmp` orders `x`.
fn total_key(x: f64) -> i64 {
    #[allow(clippy::cast_possible_wrap)]
    let bits = x.to_bits() as i64;
    bits ^ ((bits >> 63) as u64 >> 1) as i64
}

/// The inverse of [`total_key`].
fn from_total_key(k: i64) -> f64 {
    #[allow(clippy::cast_sign_loss)]
    f64::from_bits((k ^ ((k >> 63) as u64 >> 1) as i64) as u64)
}

/// The `n`-th largest of `v` (1-based; `v.len() ≥ n ≥ 1`), keeping only the `n`
/// largest in `v`.
fn nth_largest(v: &mut Vec<f64>, n: usize) -> f64 {
    v.select_nth_unstable_by(n - 1, |a, b| b.total_cmp(a));
    v.truncate(n);
    v[n - 1]
}

/// Parses a JSON array of strings as stored in `tags`/`files_*`; anything else is empty.
pub fn json_list(text: &str) -> Vec<String> {
    serde_json::from_str(text).unwrap_or_default()
}

/// Parses a stored time (`YYYY-MM-DDTHH:MM:SSZ`); an unreadable value becomes the epoch.
pub fn parse_time(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or_default()
}

/// Encodes a vector as little-endian `f32` bytes.
pub fn encode_vector(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Decodes little-endian `f32` bytes; a trailing partial value is dropped.
pub fn decode_vector(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// `v` scaled to unit L2 norm (a zero vector stays zero).
pub fn normalized(v: &[f32]) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 && norm.is_finite() {
        v.iter().map(|x| x / norm).collect()
    } else {
        vec![0.0; v.len()]
    }
}

fn sqlite_error(path: &Path, source: rusqlite::Error) -> StoreError {
    StoreError::Sqlite {
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(id: &str, body: &str) -> Memory {
        let t = DateTime::parse_from_rfc3339("2026-07-01T10:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        Memory {
            id: id.into(),
            title: "Decisión".into(),
            kind: "decision".into(),
            tags: vec!["db".into()],
            created: t,
            updated: t,
            body: body.into(),
            files_read: vec!["src/main.rs".into()],
            files_modified: vec![],
            origin: None,
        }
    }

    #[test]
    fn upsert_is_idempotent_and_updates() {
        let store = MemoryStore::open_in_memory().unwrap();
        assert_eq!(store.upsert(&sample("a", "one")).unwrap(), Upsert::Inserted);
        assert_eq!(
            store.upsert(&sample("a", "one")).unwrap(),
            Upsert::Unchanged
        );
        assert_eq!(store.upsert(&sample("a", "two")).unwrap(), Upsert::Updated);
        assert_eq!(store.count().unwrap(), 1);
        let fts: i64 = store
            .lock()
            .query_row(
                "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'two'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(fts, 1);
        let fold: i64 = store
            .lock()
            .query_row(
                "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'decision'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(fold, 1, "accents fold");
        assert_eq!(
            store.get("a").unwrap().unwrap().files_read,
            vec!["src/main.rs".to_string()]
        );
    }

    #[test]
    fn embeddings_roundtrip_normalised() {
        let store = MemoryStore::open_in_memory().unwrap();
        store.upsert(&sample("a", "one")).unwrap();
        assert!(store.set_embedding("a", &[3.0, 4.0], "m").unwrap());
        assert!(!store.set_embedding("zz", &[1.0], "m").unwrap());
        assert_eq!(store.count_embedded("m").unwrap(), 1);
        assert!(store.missing_embeddings("m").unwrap().is_empty());
        assert_eq!(store.missing_embeddings("other").unwrap().len(), 1);
        let blob: Vec<u8> = store
            .lock()
            .query_row("SELECT embedding FROM memories", [], |r| r.get(0))
            .unwrap();
        assert_eq!(decode_vector(&blob), vec![0.6, 0.8]);
    }

    /// A deterministic pseudo-random vector (xorshift).
    fn noise(seed: u64, dim: usize) -> Vec<f32> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..dim)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 40) as f32 / (1u64 << 24) as f32 - 0.5
            })
            .collect()
    }

    #[test]
    fn top_dots_prune_and_keep_the_exact_top_n() {
        let store = MemoryStore::open_in_memory().unwrap();
        let dim = 256;
        for i in 0..3000 {
            let id = format!("m{i}");
            store.upsert(&sample(&id, &format!("body {i}"))).unwrap();
            store.set_embedding(&id, &noise(i, dim), "m").unwrap();
        }
        let conn = store.lock();
        let index = store.search_index(&conn, Some("m")).unwrap();
        let q = normalized(&noise(99_999, dim));
        for keep_every in [1, 3] {
            let keep = |i: usize| i % keep_every == 0;
            let mut all = Vec::new();
            index.for_each_dot(&q, keep, |i, d| all.push((d, i)));
            all.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            for n in [1, 5, 20, 100] {
                let mut got = Vec::new();
                let kept = index.for_each_top_dot(&q, n, keep, |i, d| got.push((d, i)));
                assert_eq!(kept, all.len());
                assert!(
                    got.len() < all.len() / 2,
                    "no pruning: {} of {}",
                    got.len(),
                    all.len()
                );
                got.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
                let bits = |v: &[(f32, usize)]| {
                    v.iter().map(|(d, i)| (d.to_bits(), *i)).collect::<Vec<_>>()
                };
                assert_eq!(
                    bits(&got[..n]),
                    bits(&all[..n]),
                    "n {n}, every {keep_every}"
                );
            }
        }
    }

    #[test]
    fn open_ro_missing_file() {
        let err = MemoryStore::open_ro(Path::new("/nonexistent/memories.sqlite")).unwrap_err();
        assert!(matches!(err, StoreError::Missing(_)));
    }
}
