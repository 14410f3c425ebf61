//! The ingest bookkeeping: what each imported file stored (its [`FileState`] and the
//! conversations it produced, tables `ingest_files` and `ingest_file_conversations`),
//! and the writer that stores a batch of files' messages and states in one
//! transaction, replacing a rewritten file's conversations.

use std::path::PathBuf;

use duckdb::params;

use super::insert::InsertCounts;
use super::rows::{append, ConversationStats};
use super::ConversationStore;
use crate::model::Message;
use crate::stores::StoreError;

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
    /// Secrets replaced before storing (a Parquet import asked to redact; 0 otherwise:
    /// other files' messages are redacted before they reach the store).
    pub secrets_redacted: usize,
}

/// Message ids stored per (source, conversation id).
type StoredKeys = std::collections::HashMap<(String, String), std::collections::HashSet<String>>;

impl ConversationStore {
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
        // Every conversation of the batch: the rewritten ones lost rows, the others
        // gained some (a stored one offered again unchanged is recomputed the same).
        self.refresh_summaries(
            &tx,
            files
                .iter()
                .flat_map(|f| f.messages.iter())
                .map(|m| (m.source.as_str(), m.conversation_id.as_str())),
        )?;
        tx.commit().map_err(|e| self.error(e))?;
        self.touch(files.iter().flat_map(|f| f.messages.iter()));
        Ok(StoredBatch {
            counts,
            forgotten: forgotten.into_iter().map(PathBuf::from).collect(),
            secrets_redacted: 0,
        })
    }

    /// For a rewritten file: replaces the conversations it produced last time that it
    /// still holds (temp table `rewritten`: its new import's `source`,
    /// `conversation_id` pairs) — deletes their rows and forgets the state of other
    /// files that produced the same conversations (their rows are gone too, so they
    /// must be imported again). Conversations the file no longer holds keep their rows:
    /// a newer export lacks what was deleted in the app, and the archive keeps it.
    /// Returns the other files' paths.
    pub(super) fn forget_previous(
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
    pub(super) fn record_files(
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
}
