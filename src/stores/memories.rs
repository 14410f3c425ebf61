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
//! - `memory_links`: `(id, rel, target)` relations written by `memo-save`:
//!   [`REL_SUPERSEDES`] (the memory `id` replaces memory `target`) and
//!   [`REL_CONVERSATION`] (it was saved from conversation `target`). Stores written
//!   before the table existed have none; readers treat a missing table as empty.
//! - `memories_changes`: `(seq, row)`, one entry per row of `memories` inserted,
//!   updated or deleted (`row` its rowid) and per change of `memory_links` (`row` 0),
//!   written by triggers; the newest [`CHANGE_LOG_KEEP`] entries are kept. A reader
//!   holding an in-memory index reads only what changed since
//!   ([`MemoryStore::search_index`]). Stores written before the table existed get it
//!   on their next writable open; until then readers reload whole.
//! - per connection, not in the file: `temp.memories_fts_instance`, an `fts5vocab`
//!   `instance` table from which [`fts::load`] copies the postings, and
//!   `temp.memories_fts_delta` ([`fts::DELTA_TABLE`]), where the text of rows added
//!   since is tokenized again for [`fts::load_rows`].
//!
//! Engines open the store with [`MemoryStore::open_ro`] (SQLite read-only flags plus
//! `PRAGMA query_only`): a search never changes the file. Writers use
//! [`MemoryStore::open_rw`] and [`MemoryStore::upsert`]; re-inserting an unchanged
//! memory is a no-op, so imports are idempotent.
//!
//! Kept in one file (816 lines): every writer of the memories schema in one place, so its invariants live once.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use chrono::{DateTime, Utc};
use rusqlite::{params, params_from_iter, Connection, OpenFlags, OptionalExtension};
use sha2::{Digest, Sha256};

use super::StoreError;
pub use crate::model::Memory;

pub mod fts;
pub mod save;

use crate::search::bm25::{FtsIndex, Unavailable};
use crate::search::filter_columns::{FilterColumns, RowMeta};
use crate::search::vectors::{normalized, VectorMatrix, VectorMatrixBuilder};
use crate::search::vocabulary::Vocabulary;

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
CREATE TABLE IF NOT EXISTS memory_links (
    id TEXT NOT NULL,
    rel TEXT NOT NULL,
    target TEXT NOT NULL,
    PRIMARY KEY (id, rel, target)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS memory_links_target ON memory_links(rel, target);
CREATE TABLE IF NOT EXISTS memories_changes (
    seq INTEGER PRIMARY KEY,
    row INTEGER NOT NULL
);
CREATE TRIGGER IF NOT EXISTS memories_changes_insert AFTER INSERT ON memories
BEGIN INSERT INTO memories_changes(row) VALUES (new.rowid); END;
CREATE TRIGGER IF NOT EXISTS memories_changes_update AFTER UPDATE ON memories
BEGIN INSERT INTO memories_changes(row) VALUES (old.rowid), (new.rowid); END;
CREATE TRIGGER IF NOT EXISTS memories_changes_delete AFTER DELETE ON memories
BEGIN INSERT INTO memories_changes(row) VALUES (old.rowid); END;
CREATE TRIGGER IF NOT EXISTS memories_changes_link_insert AFTER INSERT ON memory_links
BEGIN INSERT INTO memories_changes(row) VALUES (0); END;
CREATE TRIGGER IF NOT EXISTS memories_changes_link_delete AFTER DELETE ON memory_links
BEGIN INSERT INTO memories_changes(row) VALUES (0); END;
";

/// Entries of `memories_changes` kept after each write (older ones are deleted): a
/// reader whose index is older than that reloads whole, which a change this large
/// would cost anyway.
pub const CHANGE_LOG_KEEP: i64 = 4096;

/// A write transaction that takes SQLite's write lock at `BEGIN IMMEDIATE`: a writer
/// that began deferred, read, and then wrote would fail at once with "database is
/// locked" when another process writes at the same moment (the read-to-write upgrade
/// cannot wait), while `IMMEDIATE` waits out the other writer within the busy timeout.
fn write_transaction(conn: &mut Connection) -> Result<rusqlite::Transaction<'_>, rusqlite::Error> {
    conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
}

/// Deletes all but the newest [`CHANGE_LOG_KEEP`] entries of `memories_changes`, inside
/// the writer's transaction.
fn trim_change_log(tx: &rusqlite::Transaction<'_>) -> Result<(), rusqlite::Error> {
    tx.execute(
        "DELETE FROM memories_changes WHERE seq <= (SELECT max(seq) FROM memories_changes) - ?1",
        [CHANGE_LOG_KEEP],
    )?;
    Ok(())
}

/// `(oldest, newest)` `seq` of `memories_changes` (`(0, 0)` when empty); `None` when
/// the store has no such table (written before it existed).
fn change_range(conn: &Connection) -> Result<Option<(i64, i64)>, rusqlite::Error> {
    let exists = conn
        .query_row(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'memories_changes'",
            [],
            |_| Ok(()),
        )
        .optional()?
        .is_some();
    if !exists {
        return Ok(None);
    }
    conn.query_row(
        "SELECT coalesce(min(seq), 0), coalesce(max(seq), 0) FROM memories_changes",
        [],
        |r| Ok(Some((r.get(0)?, r.get(1)?))),
    )
}

/// `memory_links.rel` of "memory `id` supersedes memory `target`" (`memo-save`'s
/// `supersedes`): the older memory stays stored and searchable, but default rankings
/// leave it out.
pub const REL_SUPERSEDES: &str = "supersedes";

/// `memory_links.rel` of "memory `id` was saved from conversation `target`" (a
/// transcript's `conversation_id`), so a recall counts the memory and that transcript
/// once.
pub const REL_CONVERSATION: &str = "conversation";

/// Format of stored times: fixed width, UTC, second precision.
pub const TIME_FORMAT: &str = "%Y-%m-%dT%H:%M:%SZ";

/// Formats a time the way the store keeps it (`YYYY-MM-DDTHH:MM:SSZ`).
pub fn format_time(t: &DateTime<Utc>) -> String {
    t.format(TIME_FORMAT).to_string()
}

/// Hash of every stored field of `m`, to tell an unchanged re-import from an update.
fn content_hash(m: &Memory) -> String {
    let mut h = Sha256::new();
    for part in [&m.title, &m.kind, &m.body] {
        h.update(part.as_bytes());
        h.update([0u8]);
    }
    for list in [&m.tags, &m.files_read, &m.files_modified] {
        for item in list {
            h.update(item.as_bytes());
            h.update([1u8]);
        }
        h.update([0u8]);
    }
    h.update(format_time(&m.created).as_bytes());
    h.update(format_time(&m.updated).as_bytes());
    h.update(m.origin.as_deref().unwrap_or("").as_bytes());
    hex::encode(h.finalize())
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
        // Temp schema only (never the file), and before `query_only`, which refuses it.
        let conn = read_only_connection(path, Some(fts::CREATE_INSTANCE_TABLE))?;
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
        let outcomes = self.upsert_many(std::slice::from_ref(memory))?;
        Ok(outcomes.first().copied().unwrap_or(Upsert::Unchanged))
    }

    /// [`MemoryStore::upsert`] of every memory of `memories`, in order, in one
    /// transaction (all or none are written): the bulk path of imports. Returns one
    /// outcome per memory.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`] on a write failure; nothing is written then.
    pub fn upsert_many(&self, memories: &[Memory]) -> Result<Vec<Upsert>, StoreError> {
        let mut conn = self.lock();
        let tx = write_transaction(&mut conn).map_err(|e| self.error(e))?;
        let mut out = Vec::with_capacity(memories.len());
        for memory in memories {
            out.push(upsert_in(&tx, memory).map_err(|e| self.error(e))?);
        }
        trim_change_log(&tx).map_err(|e| self.error(e))?;
        tx.commit().map_err(|e| self.error(e))?;
        Ok(out)
    }

    /// Stores `vector` (L2-normalised here) as the embedding of memory `id`, produced by
    /// model `model`. Returns false when no memory has that id.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`] on a write failure.
    pub fn set_embedding(&self, id: &str, vector: &[f32], model: &str) -> Result<bool, StoreError> {
        let done = self.set_embeddings(&[(id.to_owned(), vec![vector.to_vec()])], model)?;
        Ok(done == 1)
    }

    /// Stores each `(id, chunk vectors)` of `items` (every vector L2-normalised here,
    /// all `dim` long) as that memory's embedding from `model`, in one transaction:
    /// the blob is the chunks' vectors one after the other, which
    /// [`MemoryStore::search_index`] splits again by the model's dimension. Returns
    /// how many ids named a memory.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`] on a write failure; nothing is written then.
    pub fn set_embeddings(
        &self,
        items: &[(String, Vec<Vec<f32>>)],
        model: &str,
    ) -> Result<usize, StoreError> {
        let mut conn = self.lock();
        let tx = write_transaction(&mut conn).map_err(|e| self.error(e))?;
        let mut done = 0;
        {
            let mut stmt = tx
                .prepare_cached(
                    "UPDATE memories SET embedding = ?2, embedding_model = ?3 WHERE id = ?1",
                )
                .map_err(|e| self.error(e))?;
            for (id, vectors) in items {
                done += stmt
                    .execute(params![id, embedding_blob(vectors), model])
                    .map_err(|e| self.error(e))?;
            }
        }
        trim_change_log(&tx).map_err(|e| self.error(e))?;
        tx.commit().map_err(|e| self.error(e))?;
        Ok(done)
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

    /// [`MemoryStore::upsert`] of `memory`, its `links` (`(rel, target)` pairs of
    /// `memory_links`, added when missing, never removed) and, when the memory is new
    /// or changed, its `embedding` (chunk vectors, L2-normalised here, and the model's
    /// name; as [`MemoryStore::set_embeddings`]) in one transaction: what `memo-save`
    /// writes. Returns the upsert's outcome and how many links were new.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`] on a write failure; nothing is written then.
    pub fn save(
        &self,
        memory: &Memory,
        links: &[(&str, String)],
        embedding: Option<(&[Vec<f32>], &str)>,
    ) -> Result<(Upsert, usize), StoreError> {
        let mut conn = self.lock();
        let tx = write_transaction(&mut conn).map_err(|e| self.error(e))?;
        let outcome = upsert_in(&tx, memory).map_err(|e| self.error(e))?;
        if let (Some((vectors, model)), true) = (embedding, outcome != Upsert::Unchanged) {
            tx.execute(
                "UPDATE memories SET embedding = ?2, embedding_model = ?3 WHERE id = ?1",
                params![memory.id, embedding_blob(vectors), model],
            )
            .map_err(|e| self.error(e))?;
        }
        let mut added = 0;
        for (rel, target) in links {
            added += tx
                .execute(
                    "INSERT OR IGNORE INTO memory_links(id, rel, target) VALUES (?1, ?2, ?3)",
                    params![memory.id, rel, target],
                )
                .map_err(|e| self.error(e))?;
        }
        trim_change_log(&tx).map_err(|e| self.error(e))?;
        tx.commit().map_err(|e| self.error(e))?;
        Ok((outcome, added))
    }

    /// The links of memories `ids` (see [`Links`]), for every id that has any.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`] on a read failure.
    pub fn links(
        &self,
        ids: &[String],
    ) -> Result<std::collections::HashMap<String, Links>, StoreError> {
        links_of(&self.lock(), ids).map_err(|e| self.error(e))
    }

    /// True when a memory with this id is stored.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`] on a read failure.
    pub fn contains(&self, id: &str) -> Result<bool, StoreError> {
        self.lock()
            .query_row("SELECT 1 FROM memories WHERE id = ?1", [id], |_| Ok(()))
            .optional()
            .map(|r| r.is_some())
            .map_err(|e| self.error(e))
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
    /// Postings of `memories_fts` for this snapshot, read on first use; the reason
    /// when the store's FTS5 data cannot stand in for `bm25()`.
    fts: OnceLock<Result<FtsIndex, Unavailable>>,
    /// Newest `memories_changes.seq` this snapshot holds (`None`: the store has no
    /// change log, so a change means a whole reload).
    changes: Option<i64>,
    /// Per row: its sequence ([`SearchIndex::neighbours`]) and `created`.
    sequence: Vec<(Option<Box<str>>, Box<str>)>,
    /// Each row's neighbours in its sequence, built on first use.
    neighbours: OnceLock<Neighbours>,
}

/// The memories around each memory in its sequence: the memories linked to the same
/// conversation (`memory_links` rel `conversation`), else imported from the same file
/// (the `origin` path, a JSON Lines memory's `#L<n>` left out), ordered by `created`
/// then rowid (file order). Two memories more than [`SESSION_GAP_SECS`] apart are not
/// neighbours (a session boundary: on LoCoMo, a memory per session scored with the
/// sessions before and after it ranked lower, docs/performance.md). Memories in no
/// sequence have no neighbours.
#[derive(Debug, Default)]
pub struct Neighbours {
    /// Per row: the previous and the next row of its sequence ([`NONE`](Self::NONE) when
    /// none).
    links: Vec<[u32; 2]>,
}

/// Largest time between two memories of one sequence that are still neighbours
/// ([`Neighbours`]): six hours.
pub const SESSION_GAP_SECS: i64 = 6 * 3600;

impl Neighbours {
    /// No neighbour.
    pub const NONE: u32 = u32::MAX;

    fn build(sequence: &[(Option<Box<str>>, Box<str>)]) -> Self {
        let mut groups: HashMap<&str, Vec<u32>> = HashMap::new();
        for (i, (seq, _)) in sequence.iter().enumerate() {
            if let Some(seq) = seq {
                groups
                    .entry(seq)
                    .or_default()
                    .push(u32::try_from(i).unwrap_or(u32::MAX));
            }
        }
        let mut links = vec![[Self::NONE; 2]; sequence.len()];
        for rows in groups.values_mut() {
            // Rows are in rowid order already; a stable sort by `created` keeps it on ties.
            rows.sort_by(|&a, &b| sequence[a as usize].1.cmp(&sequence[b as usize].1));
            let at = |r: u32| parse_time(&sequence[r as usize].1).timestamp();
            for w in rows.windows(2) {
                if (at(w[1]) - at(w[0])).abs() <= SESSION_GAP_SECS {
                    links[w[0] as usize][1] = w[1];
                    links[w[1] as usize][0] = w[0];
                }
            }
        }
        Self { links }
    }

    /// Pushes onto `out` up to `window` rows on each side of `row` in its sequence,
    /// nearest first, skipping none.
    pub fn around(&self, row: usize, window: usize, out: &mut Vec<usize>) {
        for side in 0..2 {
            let mut at = row;
            for _ in 0..window {
                match self.links.get(at).map(|l| l[side]) {
                    Some(n) if n != Self::NONE => {
                        at = n as usize;
                        out.push(at);
                    }
                    _ => break,
                }
            }
        }
    }
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

impl SearchIndex {
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
            fts: OnceLock::new(),
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
        let conversation = if has_links_table(conn)? {
            "(SELECT 'conversation:' || l.target FROM memory_links l \
              WHERE l.id = memories.id AND l.rel = 'conversation' LIMIT 1)"
        } else {
            "NULL"
        };
        let mut stmt = conn.prepare(&format!(
            "SELECT rowid, id, type, updated, files_read, files_modified, \
             CASE WHEN embedding IS NOT NULL AND embedding_model = ?1 THEN embedding END, \
             created, coalesce({conversation}, \
               CASE WHEN instr(origin, '#L') > 0 THEN 'file:' || substr(origin, 1, instr(origin, '#L') - 1) \
                    WHEN instr(origin, '/') > 0 OR instr(origin, '\\') > 0 THEN 'file:' || origin END) \
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
    /// Anything else (a row updated or deleted, a trimmed change log, no log) answers
    /// [`Refresh::Reload`] and leaves the index as it was.
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
        let fts_added = match (self.fts.get(), added.is_empty()) {
            (Some(Ok(_)), false) => Some(fts::load_rows(conn, &added)?),
            _ => None,
        };
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
            self.fts = match (self.fts.take(), fts_added) {
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
        let built = fts::load(conn, &rowids)?;
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

/// One memory's upsert inside the caller's transaction `tx` (see
/// [`MemoryStore::upsert`]).
fn upsert_in(tx: &rusqlite::Transaction<'_>, memory: &Memory) -> Result<Upsert, rusqlite::Error> {
    let hash = content_hash(memory);
    let existing: Option<(i64, String)> = tx
        .query_row(
            "SELECT rowid, content_hash FROM memories WHERE id = ?1",
            [&memory.id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
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
                ?;
            tx.execute("DELETE FROM memories_fts WHERE rowid = ?1", [rowid])?;
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
                ?;
            (Upsert::Inserted, Some(tx.last_insert_rowid()))
        }
    };
    // New and changed memories get their full-text row (re)written the same way.
    if let Some(rowid) = rowid {
        tx.execute(
            "INSERT INTO memories_fts(rowid, title, tags, body) VALUES (?1, ?2, ?3, ?4)",
            params![rowid, memory.title, memory.tags.join(" "), memory.body],
        )?;
    }
    Ok(outcome)
}

/// What `memory_links` says about one memory.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Links {
    /// Ids of the memories that supersede this one, sorted.
    pub superseded_by: Vec<String>,
    /// Ids of the memories this one supersedes (sorted).
    pub supersedes: Vec<String>,
    /// The conversation it was saved from, when recorded.
    pub conversation_id: Option<String>,
}

/// True when the store at `conn` has the `memory_links` table (stores written before
/// it existed do not).
///
/// # Errors
/// A SQLite error while reading the schema.
pub fn has_links_table(conn: &Connection) -> Result<bool, rusqlite::Error> {
    conn.query_row(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'memory_links'",
        [],
        |_| Ok(()),
    )
    .optional()
    .map(|r| r.is_some())
}

/// [`Links`] of every id of `ids` that has any, read through `conn` (empty when the
/// store has no `memory_links` table).
///
/// # Errors
/// A SQLite error while reading.
pub fn links_of(
    conn: &Connection,
    ids: &[String],
) -> Result<std::collections::HashMap<String, Links>, rusqlite::Error> {
    let mut out: std::collections::HashMap<String, Links> = std::collections::HashMap::new();
    if ids.is_empty() || !has_links_table(conn)? {
        return Ok(out);
    }
    let marks = vec!["?"; ids.len()].join(",");
    let sql = format!(
        "SELECT id, rel, target, 0 FROM memory_links WHERE id IN ({marks}) \
         UNION ALL SELECT target, rel, id, 1 FROM memory_links WHERE rel = 'supersedes' AND target IN ({marks}) \
         ORDER BY 1, 2, 3"
    );
    let mut stmt = conn.prepare(&sql)?;
    let mut rows = stmt.query(params_from_iter(ids.iter().chain(ids.iter())))?;
    while let Some(r) = rows.next()? {
        let id: String = r.get(0)?;
        let rel: String = r.get(1)?;
        let other: String = r.get(2)?;
        let reverse: i64 = r.get(3)?;
        let links = out.entry(id).or_default();
        match (rel.as_str(), reverse) {
            (REL_SUPERSEDES, 0) => links.supersedes.push(other),
            (REL_SUPERSEDES, _) => links.superseded_by.push(other),
            (REL_CONVERSATION, 0) => {
                links.conversation_id.get_or_insert(other);
            }
            _ => {}
        }
    }
    Ok(out)
}

/// Ids of every memory some other memory supersedes (empty without `memory_links`).
fn superseded_ids(conn: &Connection) -> Result<std::collections::HashSet<String>, rusqlite::Error> {
    if !has_links_table(conn)? {
        return Ok(std::collections::HashSet::new());
    }
    let mut stmt =
        conn.prepare_cached("SELECT DISTINCT target FROM memory_links WHERE rel = 'supersedes'")?;
    let ids = stmt
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<Result<_, _>>()?;
    Ok(ids)
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

/// The stored `embedding` blob of a memory's chunk vectors: each L2-normalised, one
/// after the other, little-endian `f32`.
fn embedding_blob(vectors: &[Vec<f32>]) -> Vec<u8> {
    vectors
        .iter()
        .flat_map(|v| encode_vector(&normalized(v)))
        .collect()
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

/// A read-only connection to the memories file at `path`, for SQL the store does not
/// write itself: the `sql` engine's queries and the conformance checks' lookups (both
/// may come from an untrusted skill folder). SQLite's read-only open flag plus
/// `PRAGMA query_only = 1`: nothing done through it can change the file.
///
/// # Errors
/// [`StoreError::Missing`] when the file does not exist (nothing imported yet),
/// [`StoreError::Sqlite`] when SQLite cannot open it.
pub fn query_connection(path: &Path) -> Result<Connection, StoreError> {
    read_only_connection(path, None)
}

/// Rolls back a hot journal that an interrupted write left beside the memories file
/// (`memories.sqlite-journal` after a `kill -9` or a full disk during an import), so
/// read-only connections can read again: SQLite refuses to read a database with a hot
/// journal through a read-only handle ("attempt to write a readonly database"). A
/// writable connection that reads one page does SQLite's own recovery (the journal is
/// played back only when no live writer holds it; a running import is waited for up
/// to 5 s, not disturbed). Nothing happens when there is no journal, so a healthy
/// store costs one `stat`.
///
/// # Errors
/// [`StoreError::Sqlite`] when the journal cannot be rolled back (e.g. the file is
/// not writable for this user), naming the file.
pub fn recover_hot_journal(path: &Path) -> Result<(), StoreError> {
    let mut journal = path.as_os_str().to_owned();
    journal.push("-journal");
    let journal = Path::new(&journal);
    match std::fs::metadata(journal) {
        Ok(meta) if meta.len() > 0 && path.exists() => {}
        _ => return Ok(()),
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(|e| sqlite_error(path, e))?;
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(|e| sqlite_error(path, e))?;
    conn.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))
        .map_err(|e| {
            sqlite_error(
                path,
                rusqlite::Error::SqliteFailure(
                    rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN),
                    Some(format!(
                        "`{}` is a hot journal left by an interrupted write and could not be rolled back: {e}",
                        journal.display()
                    )),
                ),
            )
        })?;
    Ok(())
}

/// The one read-only opener of the memories file ([`query_connection`] and
/// [`MemoryStore::open_ro`] both come here, so hardening it covers every reader):
/// opens `path` with the read-only flag, runs `temp_setup` (statements that may only
/// create temp objects), then sets `PRAGMA query_only`.
fn read_only_connection(path: &Path, temp_setup: Option<&str>) -> Result<Connection, StoreError> {
    if !path.exists() {
        return Err(StoreError::Missing {
            store: super::Store::Memories,
            path: path.to_path_buf(),
        });
    }
    recover_hot_journal(path)?;
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(|e| sqlite_error(path, e))?;
    // A writer committing holds the file for milliseconds: wait rather than fail.
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(|e| sqlite_error(path, e))?;
    if let Some(setup) = temp_setup {
        conn.execute_batch(setup)
            .map_err(|e| sqlite_error(path, e))?;
    }
    conn.pragma_update(None, "query_only", 1)
        .map_err(|e| sqlite_error(path, e))?;
    Ok(conn)
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
    use std::collections::HashMap;

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
    fn two_writers_on_one_file_both_commit_every_save() {
        // Two processes saving at once (a server and `skills memo add`): each write
        // reads before it writes, so a deferred transaction's lock upgrade failed at
        // once with "database is locked"; BEGIN IMMEDIATE waits for the other writer.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("memories.sqlite");
        drop(MemoryStore::open_rw(&path).unwrap());
        let writers: Vec<_> = ["a", "b"]
            .into_iter()
            .map(|who| {
                let path = path.clone();
                std::thread::spawn(move || {
                    let store = MemoryStore::open_rw(&path).unwrap();
                    for i in 0..200 {
                        let m = sample(&format!("{who}{i}"), &format!("body {who} {i}"));
                        store.save(&m, &[], None).unwrap();
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        assert_eq!(MemoryStore::open_ro(&path).unwrap().count().unwrap(), 400);
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
        let index = store.search_index(&conn, Some(("m", dim))).unwrap();
        let q = normalized(&noise(99_999, dim));
        for keep_every in [1, 3] {
            let keep = |i: usize| i.is_multiple_of(keep_every);
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

    /// Memories of several chunks: the pruned pass ranks the `n` best memories by their
    /// best chunk exactly as scoring every chunk does, and computes few chunks.
    #[test]
    fn top_dots_rank_memories_by_their_best_chunk() {
        let store = MemoryStore::open_in_memory().unwrap();
        let dim = 64;
        let mut items = Vec::new();
        for i in 0..2000u64 {
            let id = format!("m{i}");
            store.upsert(&sample(&id, &format!("body {i}"))).unwrap();
            // Every fourth memory has 1 + i % 7 chunks: many second chunks in all.
            let chunks = if i % 4 == 0 { 1 + (i % 7) as usize } else { 1 };
            let vectors = (0..chunks).map(|c| noise(i * 10 + c as u64, dim)).collect();
            items.push((id, vectors));
        }
        store.set_embeddings(&items, "m").unwrap();
        let conn = store.lock();
        let index = store.search_index(&conn, Some(("m", dim))).unwrap();
        assert!(index.chunk_vectors() > index.embedded() + 1000);
        let best_per_row = |pairs: Vec<(usize, f32)>| {
            let mut best: HashMap<usize, f32> = HashMap::new();
            for (i, d) in pairs {
                let b = best.entry(i).or_insert(d);
                if d > *b {
                    *b = d;
                }
            }
            let mut v: Vec<(f32, usize)> = best.into_iter().map(|(i, d)| (d, i)).collect();
            v.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            v.into_iter()
                .map(|(d, i)| (d.to_bits(), i))
                .collect::<Vec<_>>()
        };
        for seed in [7, 99_999, 123_456] {
            let q = normalized(&noise(seed, dim));
            for keep_every in [1, 3] {
                let keep = |i: usize| i.is_multiple_of(keep_every);
                let mut all = Vec::new();
                index.for_each_dot(&q, keep, |i, d| all.push((i, d)));
                let total = all.len();
                let all = best_per_row(all);
                for n in [1, 10, 40] {
                    let mut got = Vec::new();
                    let kept = index.for_each_top_dot(&q, n, keep, |i, d| got.push((i, d)));
                    assert_eq!(kept, total);
                    assert!(
                        got.len() < total / 4,
                        "no pruning: {} of {total}",
                        got.len()
                    );
                    let got = best_per_row(got);
                    assert_eq!(got[..n], all[..n], "seed {seed}, n {n}, every {keep_every}");
                }
            }
        }
    }

    /// Everything a search reads of an index, for comparing a refreshed index with a
    /// whole reload: rows, superseded flags, every chunk's dot product with a query,
    /// the filter columns and the FTS5 postings.
    fn snapshot(store: &MemoryStore, dim: usize) -> (usize, String) {
        let conn = store.lock();
        let index = store.search_index(&conn, Some(("m", dim))).unwrap();
        let q = normalized(&noise(4242, dim));
        let mut dots = Vec::new();
        index.for_each_dot(&q, |_| true, |i, d| dots.push((i, d.to_bits())));
        dots.sort_unstable();
        let fts = index.fts(&conn).unwrap().map(|f| format!("{f:?}"));
        let state = format!(
            "{:?}\n{:?}\n{dots:?}\n{:?}\n{fts:?}\n{} {}",
            index.rows(),
            (0..index.rows().len())
                .map(|i| index.is_superseded(i))
                .collect::<Vec<_>>(),
            index.filter_columns(),
            index.embedded(),
            index.superseded_rows(),
        );
        (Arc::as_ptr(&index) as usize, state)
    }

    /// New memories saved by another connection are appended to a reader's index in
    /// place, and the result is what a fresh reader loads; an updated memory makes the
    /// reader load whole (a new index), with the same agreement.
    #[test]
    fn refresh_after_saves_equals_a_whole_reload() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("memories.sqlite");
        let dim = 16;
        let writer = MemoryStore::open_rw(&path).unwrap();
        let memory = |i: u64| {
            let mut m = sample(
                &format!("m{i}"),
                &format!("body {i} tokio serde w{}", i % 13),
            );
            m.kind = ["decision", "fact", "bug"][(i % 3) as usize].into();
            m.updated += chrono::Duration::seconds((i % 17) as i64);
            m.files_modified = vec![format!("src/f{}.rs", i % 5)];
            m
        };
        let chunks = |i: u64| {
            (0..1 + i % 3)
                .map(|c| noise(i * 7 + c, dim))
                .collect::<Vec<_>>()
        };
        for i in 0..200 {
            writer
                .save(&memory(i), &[], Some((&chunks(i), "m")))
                .unwrap();
        }
        let reader = MemoryStore::open_ro(&path).unwrap();
        let (first, _) = snapshot(&reader, dim);
        // memo-save's writes: new memories with vectors, one superseding an older one,
        // one with a new word and a new type.
        for i in 200..205 {
            writer
                .save(&memory(i), &[], Some((&chunks(i), "m")))
                .unwrap();
        }
        let mut odd = memory(205);
        odd.kind = "preference".into();
        odd.body = "zanzibar quokka".into();
        writer
            .save(
                &odd,
                &[(REL_SUPERSEDES, "m3".into())],
                Some((&chunks(205), "m")),
            )
            .unwrap();
        let (refreshed, state) = snapshot(&reader, dim);
        assert_eq!(refreshed, first, "the held index is refreshed in place");
        let (_, fresh) = snapshot(&MemoryStore::open_ro(&path).unwrap(), dim);
        assert_eq!(state, fresh);
        assert!(state.contains("\"preference\"") && state.contains("Some(\"FtsIndex {"));

        // An update of a held row: a whole reload, equal to a fresh reader's.
        let mut changed = memory(7);
        changed.tags = vec!["other".into()];
        writer.save(&changed, &[], Some((&chunks(7), "m"))).unwrap();
        let (reloaded, state) = snapshot(&reader, dim);
        assert_ne!(reloaded, first, "an update reloads");
        let (_, fresh) = snapshot(&MemoryStore::open_ro(&path).unwrap(), dim);
        assert_eq!(state, fresh);

        // A reader whose index is older than the kept change log reloads too.
        let (before, _) = snapshot(&reader, dim);
        let many: Vec<Memory> = (300..300 + CHANGE_LOG_KEEP as u64).map(memory).collect();
        writer.upsert_many(&many).unwrap();
        let (after, state) = snapshot(&reader, dim);
        assert_ne!(after, before);
        let (_, fresh) = snapshot(&MemoryStore::open_ro(&path).unwrap(), dim);
        assert_eq!(state, fresh);
    }

    #[test]
    fn open_ro_missing_file() {
        let err = MemoryStore::open_ro(Path::new("/nonexistent/memories.sqlite")).unwrap_err();
        assert!(matches!(
            err,
            StoreError::Missing {
                store: crate::stores::Store::Memories,
                ..
            }
        ));
    }
}
