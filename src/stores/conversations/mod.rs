//! DuckDB store of raw messages: table `all_conversations` with brain-mcp's L0 columns.
//!
//! Times are stored as `TIMESTAMP` values in UTC. `created` is the message time (the
//! conversation's time when the source had none, see `temporal_precision`), `updated`
//! the time of the conversation's newest message. Rows are keyed by
//! (`source`, `conversation_id`, `message_id`) — sources reuse node ids such as `msg-1`
//! across conversations — so importing the same files twice adds nothing. The key is
//! enforced by this module's writers, not by a `PRIMARY KEY`: DuckDB's index over three
//! `VARCHAR`s made each ingest commit several times slower and the file twice as big,
//! and no query here looks rows up by key. Stores created with that index keep it,
//! which changes nothing but speed.
//!
//! Column `is_injected` (last, added to older stores when opened writable) marks user
//! messages a harness injected (see `ingest::injected`); user-role search
//! leaves them out.
//!
//! Layout: this file holds the store handle and every writer of `all_conversations`
//! (the key rule and the changed-conversation tracking exist once); `schema` the
//! table, `rows` how one message becomes a row, `parquet` the Parquet import (a
//! second `impl` block of the same writer), `lock` the waits for other processes'
//! file locks.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use duckdb::{params, Connection};

use super::StoreError;
use crate::cancel::{Cancel, OnStop};
use crate::model::Message;

pub mod embeddings;
pub mod index;
mod lock;
mod parquet;
pub mod project;
mod rows;
mod schema;
pub mod segment;

pub use lock::lock_holder;
use lock::{wait_for_lock, READ_LOCK_WAIT, WRITE_LOCK_WAIT};
use rows::append;
pub use schema::COLUMNS;
use schema::CREATE_TABLE;

use std::sync::Arc;

use crate::embed::Embedder;
use embeddings::{EmbedReport, UnitSpec};
use index::{Touched, UpdateReport};

/// What the last import stored from one file (table `ingest_files`, one row per
/// file; the conversations it produced are in `ingest_file_conversations`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileState {
    /// The file's canonical path.
    pub path: String,
    /// Its format's source name (`claude-code`, `codex`…).
    pub format: String,
    /// Size in bytes when imported.
    pub size: u64,
    /// Modification time when imported, nanoseconds since the Unix epoch.
    pub mtime_ns: i64,
    /// Append-only formats: byte offset after the last complete line read (else the size).
    pub offset: u64,
    /// 1-based number of that line (0 for whole-document formats).
    pub line: u64,
    /// `msg_index` of the next message (append-only formats).
    pub next_index: i64,
    /// Lowercase-hex SHA-256 of the (up to 4 KiB of) bytes just before `offset`; a
    /// grown file whose bytes there differ was rewritten, not appended to.
    pub tail_hash: String,
    /// The importer's carried-over state as a JSON object of strings.
    pub context: String,
    /// Messages parsed from the file, all imports added up.
    pub messages: u64,
}

/// How [`ConversationStore::store_file`] treats rows a file stored before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Previous {
    /// First import of the file, or more lines of an append-only file: keep them.
    Keep,
    /// The file was rewritten: delete the rows of the conversations it produced last
    /// time and still holds before inserting (so edited or renumbered messages are not
    /// duplicated), and forget the state of other files that produced the same
    /// conversations (returned in [`StoredBatch::forgotten`], to import them again).
    /// Conversations it no longer holds keep their rows.
    Replace,
}

/// One file's share of [`ConversationStore::store_files`]: what was parsed from it,
/// its new state, and what to do with the rows it stored before.
#[derive(Debug, Clone, Copy)]
pub struct FileBatch<'a> {
    /// Messages parsed from the file (only the new lines of a resumed file).
    pub messages: &'a [Message],
    /// The file's state after this import.
    pub state: &'a FileState,
    /// What to do with the rows the file stored before.
    pub previous: Previous,
}

/// What [`ConversationStore::store_files`] (and `store_file`, `import_parquet`) did.
#[derive(Debug, Default, Clone)]
pub struct StoredBatch {
    /// Per file, in order: rows offered and rows added.
    pub counts: Vec<InsertCounts>,
    /// Files imported earlier, outside this batch, that produced some of the same
    /// conversations as a rewritten file of the batch: those conversations' rows were
    /// replaced by the rewritten file's, so these files' states were forgotten and
    /// they must be imported again to restore their messages
    /// (`ingest::ingest_paths` does so in the same run).
    pub forgotten: Vec<PathBuf>,
}

/// Message ids stored per (source, conversation id).
type StoredKeys = std::collections::HashMap<(String, String), std::collections::HashSet<String>>;

/// Per-conversation columns of a conversation stored in one go: computed from its
/// rows before they are appended, instead of an `UPDATE` afterwards.
struct ConversationStats {
    count: i64,
    first_index: i64,
    last_index: i64,
    newest: chrono::DateTime<chrono::Utc>,
    /// Title of the latest message (by `msg_index`) that has one.
    title: Option<(i64, String)>,
}

impl ConversationStats {
    fn new(m: &Message) -> Self {
        Self {
            count: 0,
            first_index: m.msg_index,
            last_index: m.msg_index,
            newest: m.timestamp,
            title: None,
        }
    }

    fn add(&mut self, m: &Message) {
        self.count += 1;
        self.first_index = self.first_index.min(m.msg_index);
        self.last_index = self.last_index.max(m.msg_index);
        self.newest = self.newest.max(m.timestamp);
        if let Some(t) = &m.conversation_title {
            if self.title.as_ref().is_none_or(|(i, _)| m.msg_index >= *i) {
                self.title = Some((m.msg_index, t.clone()));
            }
        }
    }
}

/// A DuckDB database file holding `all_conversations`.
///
/// Opened either writable ([`ConversationStore::open_rw`], for ingest) or read-only
/// ([`ConversationStore::open_ro`], for engines). Queries take a cloned connection, so
/// no lock is held while a query runs.
pub struct ConversationStore {
    path: PathBuf,
    conn: Mutex<Connection>,
    /// Cached answer of [`ConversationStore::marks_injected`].
    marks_injected: std::sync::OnceLock<bool>,
    /// The search index's writer (writable file stores only): holds the index lock
    /// until [`ConversationStore::close`] publishes.
    index: Option<index::Writer>,
    /// Conversations written through this handle, for the index update at close.
    touched: Mutex<Touched>,
    /// The embeddings manifest found at a writable open (before DuckDB opened).
    embed_base: Option<embeddings::Base>,
    /// The embeddings writer, once [`ConversationStore::embed_with`] asked for one.
    embed: Option<embeddings::Writer>,
    /// The call whose stop interrupts every connection handed out
    /// ([`ConversationStore::interrupted_by`]), and the hooks registered for them.
    stop: Option<(Cancel, Mutex<Vec<OnStop>>)>,
}

/// What [`ConversationStore::close_with`] did.
#[derive(Debug, Default)]
pub struct CloseReport {
    /// The search index update (`None` for read-only and in-memory stores).
    pub index: Option<UpdateReport>,
    /// The embeddings update: `None` when none was asked for
    /// ([`ConversationStore::embed_with`]), else what it did or why it failed (the
    /// rows and the index are intact either way; semantic-search then says the
    /// embeddings are stale).
    pub embeddings: Option<Result<EmbedReport, String>>,
}

/// Counts returned by [`ConversationStore::insert`].
#[derive(Debug, Default, Clone, Copy, serde::Serialize)]
pub struct InsertCounts {
    /// Rows offered.
    pub offered: usize,
    /// Rows actually added (offered minus rows whose key was already stored).
    pub added: usize,
}

impl ConversationStore {
    /// Opens (creating when missing) a writable store and its table. Waits up to 30 s
    /// while another process holds the file (a search in `skills serve` holds it for
    /// one call).
    ///
    /// # Errors
    /// [`StoreError::Locked`] when the file stays locked;
    /// [`StoreError::Io`] when the parent directory cannot be created,
    /// [`StoreError::DuckDb`] when DuckDB cannot open the file (e.g. another process
    /// holds its write lock).
    pub fn open_rw(path: &Path) -> Result<Self, StoreError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs_err::create_dir_all(parent)?;
        }
        // The index lock first: the manifest is compared with the database as the
        // last writer left it, before this open changes anything.
        let index = index::Writer::begin(path)
            .map_err(|e| StoreError::Io(std::io::Error::other(format!("search index: {e}"))))?;
        let embed_base = Some(embeddings::Base::read(path));
        let conn = wait_for_lock(path, WRITE_LOCK_WAIT, || Connection::open(path))?;
        conn.execute_batch(CREATE_TABLE)
            .map_err(|e| duck(path, e))?;
        Ok(Self {
            path: path.to_path_buf(),
            conn: Mutex::new(conn),
            marks_injected: std::sync::OnceLock::new(),
            index: Some(index),
            touched: Mutex::default(),
            embed_base,
            embed: None,
            stop: None,
        })
    }

    /// Opens an existing store read-only, sandboxed for skill SQL
    /// ([`super::sandbox::duckdb_config`]: no files, network, extensions or settings
    /// beyond this one file). Waits up to 10 s while another process
    /// writes it (`skills ingest`). Engines open it per call and drop it afterwards, so
    /// a long-running `skills serve` never keeps `skills ingest` out and always sees
    /// the latest import.
    ///
    /// # Errors
    /// [`StoreError::Locked`] when the file stays locked;
    /// [`StoreError::Missing`] when the file does not exist; [`StoreError::DuckDb`] otherwise.
    pub fn open_ro(path: &Path) -> Result<Self, StoreError> {
        if !path.exists() {
            return Err(StoreError::Missing {
                store: super::Store::Conversations,
                path: path.to_path_buf(),
            });
        }
        // Readers run SQL from skill folders: the sandbox's configuration (external
        // access off, configuration locked) is applied as the file is opened.
        let conn = wait_for_lock(path, READ_LOCK_WAIT, || {
            Connection::open_with_flags(path, super::sandbox::duckdb_config()?)
        })?;
        Ok(Self {
            path: path.to_path_buf(),
            conn: Mutex::new(conn),
            marks_injected: std::sync::OnceLock::new(),
            index: None,
            touched: Mutex::default(),
            embed_base: None,
            embed: None,
            stop: None,
        })
    }

    /// An in-memory store (tests, benchmarks).
    ///
    /// # Errors
    /// [`StoreError::DuckDb`] if DuckDB cannot start.
    pub fn open_in_memory() -> Result<Self, StoreError> {
        let path = PathBuf::from(":memory:");
        let conn = Connection::open_in_memory().map_err(|e| duck(&path, e))?;
        conn.execute_batch(CREATE_TABLE)
            .map_err(|e| duck(&path, e))?;
        Ok(Self {
            path,
            conn: Mutex::new(conn),
            marks_injected: std::sync::OnceLock::new(),
            index: None,
            touched: Mutex::default(),
            embed_base: None,
            embed: None,
            stop: None,
        })
    }

    /// True when the table has column `is_injected`. A store last written by a version
    /// before that column is opened read-only without it (any `skills ingest` adds
    /// it); its rows then count as not injected, and queries must not name it.
    ///
    /// # Errors
    /// [`StoreError::DuckDb`].
    pub fn marks_injected(&self) -> Result<bool, StoreError> {
        if let Some(known) = self.marks_injected.get() {
            return Ok(*known);
        }
        let conn = self.connection()?;
        let has: bool = conn
            .query_row(
                "SELECT count(*) > 0 FROM duckdb_columns()
                 WHERE table_name = 'all_conversations' AND column_name = 'is_injected'",
                [],
                |r| r.get(0),
            )
            .map_err(|e| self.error(e))?;
        Ok(*self.marks_injected.get_or_init(|| has))
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A fresh connection to the same database, for one query; the store's lock is
    /// held only while cloning.
    ///
    /// # Errors
    /// [`StoreError::DuckDb`] when the connection cannot be cloned.
    pub fn connection(&self) -> Result<Connection, StoreError> {
        let guard = self
            .conn
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let conn = guard.try_clone().map_err(|e| duck(&self.path, e))?;
        drop(guard);
        if let Some((cancel, hooks)) = &self.stop {
            cancel.check().map_err(StoreError::Stopped)?;
            let handle = conn.interrupt_handle();
            let hook = cancel.on_stop(move || handle.interrupt());
            hooks
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(hook);
        }
        Ok(conn)
    }

    /// This store with every connection it hands out ([`ConversationStore::connection`])
    /// interrupted when `cancel` stops (DuckDB's `interrupt()`: the running query fails),
    /// and refused once it has — what an engine call's store is.
    #[must_use]
    pub fn interrupted_by(mut self, cancel: &Cancel) -> Self {
        self.stop = Some((cancel.clone(), Mutex::new(Vec::new())));
        self
    }

    /// Wraps a DuckDB error with this store's path.
    pub fn error(&self, e: duckdb::Error) -> StoreError {
        duck(&self.path, e)
    }

    /// Inserts messages in one transaction; rows whose key (`source`, `conversation_id`, `message_id`) is already stored
    /// are ignored. Afterwards the per-conversation columns (`is_first`, `is_last`,
    /// `conversation_msg_count`, `updated`) are recomputed for the touched conversations,
    /// and a row without `conversation_title` takes the conversation's latest title (lines
    /// appended to a session do not repeat it).
    ///
    /// # Errors
    /// [`StoreError::DuckDb`]; on error nothing of this batch is stored.
    pub fn insert(&self, messages: &[Message]) -> Result<InsertCounts, StoreError> {
        if messages.is_empty() {
            return Ok(InsertCounts::default());
        }
        let mut conn = self.connection()?;
        let tx = conn.transaction().map_err(|e| self.error(e))?;
        let counts = self.insert_in(&tx, messages)?;
        tx.commit().map_err(|e| self.error(e))?;
        self.touch(messages.iter());
        Ok(counts)
    }

    /// The body of [`Self::insert`] inside the caller's transaction.
    fn insert_in(
        &self,
        tx: &duckdb::Transaction<'_>,
        messages: &[Message],
    ) -> Result<InsertCounts, StoreError> {
        if messages.is_empty() {
            return Ok(InsertCounts::default());
        }
        self.stage(tx, messages.iter())?;
        self.merge_staging(tx, messages.len())
    }

    /// Fills temp table `staging` (shaped like `all_conversations`) with `messages`;
    /// their per-conversation columns are placeholders.
    fn stage<'m>(
        &self,
        tx: &duckdb::Transaction<'_>,
        messages: impl Iterator<Item = &'m Message>,
    ) -> Result<(), StoreError> {
        tx.execute_batch(
            "CREATE OR REPLACE TEMP TABLE staging AS SELECT * FROM all_conversations LIMIT 0",
        )
        .map_err(|e| self.error(e))?;
        let mut app = tx.appender("staging").map_err(|e| self.error(e))?;
        for m in messages {
            append(&mut app, m, None).map_err(|e| self.error(e))?;
        }
        app.flush().map_err(|e| self.error(e))
    }

    /// Moves temp table `staging` into the table, leaving out rows whose key
    /// (`source`, `conversation_id`, `message_id`) is stored or repeated in `staging`
    /// (the first by `msg_index` is kept), and recomputes the touched conversations'
    /// columns. The key is enforced here rather than by a `PRIMARY KEY`: DuckDB's
    /// index over three `VARCHAR`s made every ingest commit several times slower.
    fn merge_staging(
        &self,
        tx: &duckdb::Transaction<'_>,
        offered: usize,
    ) -> Result<InsertCounts, StoreError> {
        tx.execute_batch(
            "CREATE OR REPLACE TEMP TABLE fresh AS
               SELECT * FROM staging s
               WHERE NOT EXISTS (
                 SELECT 1 FROM all_conversations a
                 WHERE a.source = s.source AND a.conversation_id = s.conversation_id
                   AND a.message_id = s.message_id)
               QUALIFY row_number() OVER (
                 PARTITION BY source, conversation_id, message_id ORDER BY msg_index) = 1;
             DROP TABLE staging;
             ALTER TABLE fresh RENAME TO staging;",
        )
        .map_err(|e| self.error(e))?;
        // Common case: none of the staged conversations is stored yet, so their columns
        // are computed on the staged rows alone and the big table is only appended to.
        let stored: bool = tx
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM all_conversations a
                 SEMI JOIN (SELECT DISTINCT source, conversation_id FROM staging) s
                   ON a.source = s.source AND a.conversation_id = s.conversation_id)",
                [],
                |r| r.get(0),
            )
            .map_err(|e| self.error(e))?;
        let added = if stored {
            let added = tx
                .execute("INSERT INTO all_conversations SELECT * FROM staging", [])
                .map_err(|e| self.error(e))?;
            self.refresh_conversations(tx, "all_conversations")?;
            added
        } else {
            self.refresh_conversations(tx, "staging")?;
            tx.execute("INSERT INTO all_conversations SELECT * FROM staging", [])
                .map_err(|e| self.error(e))?
        };
        tx.execute_batch("DROP TABLE staging")
            .map_err(|e| self.error(e))?;
        Ok(InsertCounts { offered, added })
    }

    /// Recomputes `conversation_msg_count`, `is_first`, `is_last`, `updated` and
    /// missing titles, in table `target`, for the conversations that have rows in temp
    /// table `staging`.
    fn refresh_conversations(
        &self,
        tx: &duckdb::Transaction<'_>,
        target: &str,
    ) -> Result<(), StoreError> {
        tx.execute_batch(&format!(
            "CREATE OR REPLACE TEMP TABLE touched AS
               SELECT source, conversation_id, count(*) AS n, min(msg_index) AS first_i,
                      max(msg_index) AS last_i, max(created) AS newest,
                      arg_max(conversation_title, msg_index)
                        FILTER (WHERE conversation_title IS NOT NULL) AS title
               FROM {target} c
               WHERE (c.source, c.conversation_id) IN (SELECT DISTINCT source, conversation_id FROM staging)
               GROUP BY source, conversation_id;
             UPDATE {target} SET
               conversation_msg_count = t.n,
               is_first = ({target}.msg_index = t.first_i),
               is_last = ({target}.msg_index = t.last_i),
               updated = t.newest,
               conversation_title = coalesce({target}.conversation_title, t.title)
             FROM touched t
             WHERE {target}.source = t.source AND {target}.conversation_id = t.conversation_id;
             DROP TABLE touched;"
        ))
        .map_err(|e| self.error(e))
    }

    /// The import state of every file imported so far, keyed by path.
    ///
    /// # Errors
    /// [`StoreError::DuckDb`].
    pub fn file_states(&self) -> Result<std::collections::HashMap<String, FileState>, StoreError> {
        let conn = self.connection()?;
        let mut stmt = conn
            .prepare(
                "SELECT path, format, size, mtime_ns, byte_offset, line, next_index, tail_hash, \
                 context, messages FROM ingest_files",
            )
            .map_err(|e| self.error(e))?;
        let to_u64 = |v: i64| u64::try_from(v).unwrap_or(0);
        let rows = stmt
            .query_map([], |r| {
                Ok(FileState {
                    path: r.get(0)?,
                    format: r.get(1)?,
                    size: to_u64(r.get(2)?),
                    mtime_ns: r.get(3)?,
                    offset: to_u64(r.get(4)?),
                    line: to_u64(r.get(5)?),
                    next_index: r.get(6)?,
                    tail_hash: r.get(7)?,
                    context: r.get(8)?,
                    messages: to_u64(r.get(9)?),
                })
            })
            .map_err(|e| self.error(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.error(e))?;
        Ok(rows.into_iter().map(|s| (s.path.clone(), s)).collect())
    }

    /// Stores what was parsed from one file and its new [`FileState`] in one
    /// transaction: either all of it is stored or none (the state then still describes
    /// the previous import, so the next run tries again). `previous` says what to do
    /// with the rows the file stored before. Rows are inserted as by [`Self::insert`].
    ///
    /// # Errors
    /// [`StoreError::DuckDb`]; on error nothing is changed.
    pub fn store_file(
        &self,
        messages: &[Message],
        state: &FileState,
        previous: Previous,
    ) -> Result<StoredBatch, StoreError> {
        self.store_files(&[FileBatch {
            messages,
            state,
            previous,
        }])
    }

    /// Stores several files' imports (see [`FileBatch`]) in ONE transaction: either all
    /// of them are stored or none (callers then fall back to [`Self::store_file`] per
    /// file, so one bad file loses only itself). Same result as calling
    /// [`Self::store_file`] for each in turn, except that rewritten files' old rows are
    /// all deleted before any new row is inserted. Returns one [`InsertCounts`] per
    /// file, in order, and the other files whose rows a rewritten file's conversations
    /// took with them (see [`StoredBatch::forgotten`]).
    ///
    /// Keys are checked here, once per batch: the message ids already stored for the
    /// batch's conversations are read in one query, and a row whose key is stored or
    /// came earlier in the batch is left out (counted as added for the first file that
    /// had it). Then a conversation the store does not hold yet (the common case on a
    /// first import) gets its per-conversation columns computed from the batch's rows
    /// and is appended straight into `all_conversations` — no staging table, no
    /// `UPDATE`; new rows of stored conversations (appended sessions) go in with one
    /// `INSERT` and one `UPDATE` of those conversations' columns for the whole batch.
    ///
    /// # Errors
    /// [`StoreError::DuckDb`]; on error nothing is changed.
    pub fn store_files(&self, files: &[FileBatch<'_>]) -> Result<StoredBatch, StoreError> {
        use std::collections::{BTreeSet, HashMap, HashSet};
        let mut conn = self.connection()?;
        let tx = conn.transaction().map_err(|e| self.error(e))?;
        let mut forgotten = BTreeSet::new();
        for f in files.iter().filter(|f| f.previous == Previous::Replace) {
            self.stage_conversations(&tx, "rewritten", f.messages.iter())?;
            forgotten.extend(self.forget_previous(&tx, &f.state.path)?);
        }
        for f in files {
            forgotten.remove(&f.state.path);
        }
        let stored = self.stored_keys(&tx, files)?;
        let mut counts = Vec::with_capacity(files.len());
        // New rows, each key once (first wins): of new conversations, and of stored ones.
        let mut fresh: Vec<&Message> = Vec::new();
        let mut more: Vec<&Message> = Vec::new();
        let mut taken: HashSet<(&str, &str, &str)> = HashSet::new();
        for f in files {
            let mut c = InsertCounts {
                offered: f.messages.len(),
                added: 0,
            };
            for m in f.messages {
                if !taken.insert((&m.source, &m.conversation_id, &m.message_id)) {
                    continue;
                }
                let known = if stored.is_empty() {
                    None
                } else {
                    stored.get(&(m.source.clone(), m.conversation_id.clone()))
                };
                match known {
                    None => fresh.push(m),
                    Some(ids) if !ids.contains(&m.message_id) => more.push(m),
                    Some(_) => continue,
                }
                c.added += 1;
            }
            counts.push(c);
        }
        let mut stats: HashMap<(&str, &str), ConversationStats> = HashMap::new();
        for m in &fresh {
            stats
                .entry((&m.source, &m.conversation_id))
                .or_insert_with(|| ConversationStats::new(m))
                .add(m);
        }
        {
            let mut app = tx
                .appender("all_conversations")
                .map_err(|e| self.error(e))?;
            for m in &fresh {
                let s = &stats[&(m.source.as_str(), m.conversation_id.as_str())];
                append(&mut app, m, Some(s)).map_err(|e| self.error(e))?;
            }
            app.flush().map_err(|e| self.error(e))?;
        }
        if !more.is_empty() {
            self.stage(&tx, more.iter().copied())?;
            tx.execute_batch("INSERT INTO all_conversations SELECT * FROM staging")
                .map_err(|e| self.error(e))?;
            self.refresh_conversations(&tx, "all_conversations")?;
            tx.execute_batch("DROP TABLE staging")
                .map_err(|e| self.error(e))?;
        }
        self.record_files(&tx, files)?;
        tx.commit().map_err(|e| self.error(e))?;
        self.touch(files.iter().flat_map(|f| f.messages.iter()));
        Ok(StoredBatch {
            counts,
            forgotten: forgotten.into_iter().map(PathBuf::from).collect(),
        })
    }

    /// For a rewritten file: replaces the conversations it produced last time that it
    /// still holds (temp table `rewritten`: its new import's `source`,
    /// `conversation_id` pairs) — deletes their rows and forgets the state of other
    /// files that produced the same conversations (their rows are gone too, so they
    /// must be imported again). Conversations the file no longer holds keep their rows:
    /// a newer export lacks what was deleted in the app, and the archive keeps it.
    /// Returns the other files' paths.
    fn forget_previous(
        &self,
        tx: &duckdb::Transaction<'_>,
        path: &str,
    ) -> Result<Vec<String>, StoreError> {
        tx.execute(
            "CREATE OR REPLACE TEMP TABLE replaced AS
               SELECT source, conversation_id FROM ingest_file_conversations WHERE path = ?
               INTERSECT SELECT source, conversation_id FROM rewritten",
            params![path],
        )
        .map_err(|e| self.error(e))?;
        let forgotten = {
            let mut stmt = tx
                .prepare(
                    "DELETE FROM ingest_files WHERE path IN (
                       SELECT o.path FROM ingest_file_conversations o
                       SEMI JOIN replaced r
                         ON o.source = r.source AND o.conversation_id = r.conversation_id
                       WHERE o.path <> ?)
                     RETURNING path",
                )
                .map_err(|e| self.error(e))?;
            let paths = stmt
                .query_map(params![path], |r| r.get::<_, String>(0))
                .map_err(|e| self.error(e))?
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| self.error(e))?;
            paths
        };
        tx.execute_batch(
            "DELETE FROM all_conversations a USING replaced r
             WHERE a.source = r.source AND a.conversation_id = r.conversation_id;
             DROP TABLE replaced;",
        )
        .map_err(|e| self.error(e))?;
        Ok(forgotten)
    }

    /// (Re)creates temp table `table` (`source`, `conversation_id`) holding the
    /// distinct conversation pairs of `messages`.
    fn stage_conversations<'m>(
        &self,
        tx: &duckdb::Transaction<'_>,
        table: &str,
        messages: impl Iterator<Item = &'m Message>,
    ) -> Result<(), StoreError> {
        tx.execute_batch(&format!(
            "CREATE OR REPLACE TEMP TABLE {table} (source VARCHAR, conversation_id VARCHAR)"
        ))
        .map_err(|e| self.error(e))?;
        let mut app = tx.appender(table).map_err(|e| self.error(e))?;
        let mut seen = std::collections::HashSet::new();
        for m in messages {
            if seen.insert((m.source.as_str(), m.conversation_id.as_str())) {
                app.append_row(params![m.source, m.conversation_id])
                    .map_err(|e| self.error(e))?;
            }
        }
        app.flush().map_err(|e| self.error(e))
    }

    /// The message ids stored for each (source, conversation id) of the batch that
    /// the store already holds (other conversations are absent).
    fn stored_keys(
        &self,
        tx: &duckdb::Transaction<'_>,
        files: &[FileBatch<'_>],
    ) -> Result<StoredKeys, StoreError> {
        let mut out = StoredKeys::new();
        let empty: bool = tx
            .query_row(
                "SELECT NOT EXISTS (SELECT 1 FROM all_conversations)",
                [],
                |r| r.get(0),
            )
            .map_err(|e| self.error(e))?;
        if empty {
            return Ok(out);
        }
        self.stage_conversations(
            tx,
            "batch_conversations",
            files.iter().flat_map(|f| f.messages),
        )?;
        let mut stmt = tx
            .prepare(
                "SELECT a.source, a.conversation_id, a.message_id FROM all_conversations a
                 SEMI JOIN batch_conversations b
                   ON a.source = b.source AND a.conversation_id = b.conversation_id",
            )
            .map_err(|e| self.error(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })
            .map_err(|e| self.error(e))?;
        for row in rows {
            let (source, conversation, id) = row.map_err(|e| self.error(e))?;
            out.entry((source, conversation)).or_default().insert(id);
        }
        tx.execute_batch("DROP TABLE batch_conversations")
            .map_err(|e| self.error(e))?;
        Ok(out)
    }

    /// Writes the files' conversation lists and states (tables
    /// `ingest_file_conversations` and `ingest_files`).
    fn record_files(
        &self,
        tx: &duckdb::Transaction<'_>,
        files: &[FileBatch<'_>],
    ) -> Result<(), StoreError> {
        tx.execute_batch(
            "CREATE OR REPLACE TEMP TABLE batch_file_conversations AS
               SELECT * FROM ingest_file_conversations LIMIT 0;
             CREATE OR REPLACE TEMP TABLE batch_files AS SELECT * FROM ingest_files LIMIT 0;",
        )
        .map_err(|e| self.error(e))?;
        {
            let mut app = tx
                .appender("batch_file_conversations")
                .map_err(|e| self.error(e))?;
            for f in files {
                let mut seen = std::collections::BTreeSet::new();
                for m in f.messages {
                    if seen.insert((m.source.as_str(), m.conversation_id.as_str())) {
                        app.append_row(params![f.state.path, m.source, m.conversation_id])
                            .map_err(|e| self.error(e))?;
                    }
                }
            }
            app.flush().map_err(|e| self.error(e))?;
        }
        {
            let to_i64 = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
            let mut app = tx.appender("batch_files").map_err(|e| self.error(e))?;
            for f in files {
                let s = f.state;
                app.append_row(params![
                    s.path,
                    s.format,
                    to_i64(s.size),
                    s.mtime_ns,
                    to_i64(s.offset),
                    to_i64(s.line),
                    s.next_index,
                    s.tail_hash,
                    s.context,
                    to_i64(s.messages),
                ])
                .map_err(|e| self.error(e))?;
            }
            app.flush().map_err(|e| self.error(e))?;
        }
        tx.execute_batch(
            "INSERT OR IGNORE INTO ingest_file_conversations
               SELECT DISTINCT * FROM batch_file_conversations;
             INSERT OR REPLACE INTO ingest_files SELECT * FROM batch_files;
             DROP TABLE batch_file_conversations;
             DROP TABLE batch_files;",
        )
        .map_err(|e| self.error(e))?;
        Ok(())
    }

    /// Records the conversations of `messages` as changed, for the index update.
    fn touch<'m>(&self, messages: impl Iterator<Item = &'m Message>) {
        let mut touched = self
            .touched
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for m in messages {
            if !touched.contains(&(m.source.clone(), m.conversation_id.clone())) {
                touched.insert((m.source.clone(), m.conversation_id.clone()));
            }
        }
    }

    /// Asks [`ConversationStore::close_with`] to bring the L1 embeddings
    /// ([`embeddings`]) up to date too, with `embedder`, units cut as `unit`. A no-op
    /// for read-only and in-memory stores.
    ///
    /// # Errors
    /// [`StoreError::Io`] when the embeddings folder cannot be created.
    pub fn embed_with(
        &mut self,
        embedder: Arc<Embedder>,
        unit: UnitSpec,
    ) -> Result<(), StoreError> {
        if let Some(base) = self.embed_base.clone() {
            self.embed = Some(
                embeddings::Writer::begin(&self.path, base, embedder, unit).map_err(|e| {
                    StoreError::Io(std::io::Error::other(format!("embeddings: {e}")))
                })?,
            );
        }
        Ok(())
    }

    /// Closes the store. A writable file store first brings its search index up to
    /// date with what this handle wrote ([`index`]), checkpoints and closes the
    /// database, then publishes the index. Dropping the store instead leaves the
    /// index stale (searches answer from DuckDB until the next writable close).
    ///
    /// Returns what the index update did (`None` for read-only and in-memory stores).
    ///
    /// # Errors
    /// [`StoreError::DuckDb`] when the checkpoint fails; an index that cannot be
    /// written is [`StoreError::Io`] — the stored rows are intact either way.
    pub fn close(self) -> Result<Option<UpdateReport>, StoreError> {
        self.close_with(&mut |_, _| {}).map(|r| r.index)
    }

    /// [`ConversationStore::close`], also bringing the embeddings up to date when
    /// [`ConversationStore::embed_with`] asked for it (new and rewritten conversations
    /// only, unless the model, the unit or the store changed), calling `progress`
    /// with (messages embedded, messages to embed). The embeddings are published
    /// with the index, after the database is closed.
    ///
    /// # Errors
    /// As [`ConversationStore::close`]; an embeddings failure is reported in
    /// [`CloseReport::embeddings`] instead.
    pub fn close_with(self, progress: embeddings::Progress<'_>) -> Result<CloseReport, StoreError> {
        let Self {
            path,
            conn,
            index,
            touched,
            embed,
            ..
        } = self;
        let conn = conn
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(writer) = index else {
            return Ok(CloseReport::default());
        };
        let touched = touched
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (manifest, report) = writer
            .update(&conn, &touched)
            .map_err(|e| StoreError::Io(std::io::Error::other(format!("search index: {e}"))))?;
        let embedded = embed.map(|w| {
            let done = w.update(&conn, &touched, progress);
            (w, done)
        });
        conn.execute_batch("CHECKPOINT")
            .map_err(|e| duck(&path, e))?;
        conn.close().map_err(|(_, e)| duck(&path, e))?;
        // The embeddings first: the index writer holds the index lock until it
        // publishes, and a reader waiting for that lock then finds both current.
        let embeddings = embedded.map(|(w, done)| {
            let (m, r) = done.map_err(|e| e.to_string())?;
            w.publish(m).map_err(|e| e.to_string())?;
            Ok(r)
        });
        writer
            .publish(manifest)
            .map_err(|e| StoreError::Io(std::io::Error::other(format!("search index: {e}"))))?;
        Ok(CloseReport {
            index: Some(report),
            embeddings,
        })
    }

    /// Number of stored messages.
    ///
    /// # Errors
    /// [`StoreError::DuckDb`].
    pub fn count(&self) -> Result<u64, StoreError> {
        let conn = self.connection()?;
        let n: i64 = conn
            .query_row("SELECT count(*) FROM all_conversations", [], |r| r.get(0))
            .map_err(|e| self.error(e))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }
}

fn duck(path: &Path, source: duckdb::Error) -> StoreError {
    StoreError::DuckDb {
        path: path.to_path_buf(),
        source,
    }
}
