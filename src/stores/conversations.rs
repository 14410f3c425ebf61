//! DuckDB store of raw messages: table `all_conversations` with brain-mcp's L0 columns.
//!
//! Times are stored as `TIMESTAMP` values in UTC. `created` is the message time (the
//! conversation's time when the source had none, see `temporal_precision`), `updated`
//! the time of the conversation's newest message. Rows are keyed by
//! (`source`, `conversation_id`, `message_id`) — sources reuse node ids such as `msg-1`
//! across conversations — so importing the same files twice adds nothing.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use chrono::{Datelike, Timelike};
use duckdb::{params, AccessMode, Config, Connection};

use super::StoreError;
use crate::ingest::Message;

/// Column list of `all_conversations`, in table order.
pub const COLUMNS: &[&str] = &[
    "source",
    "model",
    "project",
    "conversation_id",
    "conversation_title",
    "created",
    "updated",
    "year",
    "month",
    "day_of_week",
    "hour",
    "message_id",
    "parent_id",
    "msg_index",
    "msg_timestamp",
    "timestamp_is_fallback",
    "role",
    "content_type",
    "is_first",
    "is_last",
    "word_count",
    "char_count",
    "conversation_msg_count",
    "has_code",
    "has_url",
    "has_question",
    "has_attachment",
    "has_citation",
    "content",
    "temporal_precision",
];

const CREATE_TABLE: &str = "
CREATE TABLE IF NOT EXISTS all_conversations (
    source VARCHAR NOT NULL,
    model VARCHAR,
    project VARCHAR,
    conversation_id VARCHAR NOT NULL,
    conversation_title VARCHAR,
    created TIMESTAMP NOT NULL,
    updated TIMESTAMP NOT NULL,
    year INTEGER NOT NULL,
    month INTEGER NOT NULL,
    day_of_week VARCHAR NOT NULL,
    hour INTEGER NOT NULL,
    message_id VARCHAR NOT NULL,
    parent_id VARCHAR,
    msg_index BIGINT NOT NULL,
    msg_timestamp TIMESTAMP,
    timestamp_is_fallback BOOLEAN NOT NULL,
    role VARCHAR NOT NULL,
    content_type VARCHAR NOT NULL,
    is_first BOOLEAN NOT NULL,
    is_last BOOLEAN NOT NULL,
    word_count INTEGER NOT NULL,
    char_count INTEGER NOT NULL,
    conversation_msg_count INTEGER NOT NULL,
    has_code INTEGER NOT NULL,
    has_url INTEGER NOT NULL,
    has_question INTEGER NOT NULL,
    has_attachment INTEGER NOT NULL,
    has_citation INTEGER NOT NULL,
    content VARCHAR NOT NULL,
    temporal_precision VARCHAR NOT NULL,
    PRIMARY KEY (source, conversation_id, message_id)
)";

/// A DuckDB database file holding `all_conversations`.
///
/// Opened either writable ([`ConversationStore::open_rw`], for ingest) or read-only
/// ([`ConversationStore::open_ro`], for engines). Queries take a cloned connection, so
/// no lock is held while a query runs.
pub struct ConversationStore {
    path: PathBuf,
    conn: Mutex<Connection>,
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
    /// Opens (creating when missing) a writable store and its table.
    ///
    /// # Errors
    /// [`StoreError::Io`] when the parent directory cannot be created,
    /// [`StoreError::DuckDb`] when DuckDB cannot open the file (e.g. another process
    /// holds its write lock).
    pub fn open_rw(path: &Path) -> Result<Self, StoreError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs_err::create_dir_all(parent)?;
        }
        let conn = Connection::open(path).map_err(|e| duck(path, e))?;
        conn.execute_batch(CREATE_TABLE)
            .map_err(|e| duck(path, e))?;
        Ok(Self {
            path: path.to_path_buf(),
            conn: Mutex::new(conn),
        })
    }

    /// Opens an existing store read-only.
    ///
    /// # Errors
    /// [`StoreError::Missing`] when the file does not exist; [`StoreError::DuckDb`] otherwise.
    pub fn open_ro(path: &Path) -> Result<Self, StoreError> {
        if !path.exists() {
            return Err(StoreError::Missing(path.to_path_buf()));
        }
        let config = Config::default()
            .access_mode(AccessMode::ReadOnly)
            .map_err(|e| duck(path, e))?;
        let conn = Connection::open_with_flags(path, config).map_err(|e| duck(path, e))?;
        Ok(Self {
            path: path.to_path_buf(),
            conn: Mutex::new(conn),
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
        })
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
        guard.try_clone().map_err(|e| duck(&self.path, e))
    }

    /// Wraps a DuckDB error with this store's path.
    pub fn error(&self, e: duckdb::Error) -> StoreError {
        duck(&self.path, e)
    }

    /// Inserts messages in one transaction; rows whose key (`source`, `conversation_id`, `message_id`) is already stored
    /// are ignored. Afterwards the per-conversation columns (`is_first`, `is_last`,
    /// `conversation_msg_count`, `updated`) are recomputed for the touched conversations.
    ///
    /// # Errors
    /// [`StoreError::DuckDb`]; on error nothing of this batch is stored.
    pub fn insert(&self, messages: &[Message]) -> Result<InsertCounts, StoreError> {
        if messages.is_empty() {
            return Ok(InsertCounts::default());
        }
        let mut conn = self.connection()?;
        let tx = conn.transaction().map_err(|e| self.error(e))?;
        tx.execute_batch(
            "CREATE OR REPLACE TEMP TABLE staging AS SELECT * FROM all_conversations LIMIT 0",
        )
        .map_err(|e| self.error(e))?;
        {
            let mut app = tx.appender("staging").map_err(|e| self.error(e))?;
            for m in messages {
                append(&mut app, m).map_err(|e| self.error(e))?;
            }
            app.flush().map_err(|e| self.error(e))?;
        }
        let before: i64 = tx
            .query_row("SELECT count(*) FROM all_conversations", [], |r| r.get(0))
            .map_err(|e| self.error(e))?;
        tx.execute_batch(
            "INSERT OR IGNORE INTO all_conversations SELECT * FROM staging;
             CREATE OR REPLACE TEMP TABLE touched AS
               SELECT conversation_id, count(*) AS n, min(msg_index) AS first_i,
                      max(msg_index) AS last_i, max(created) AS newest
               FROM all_conversations
               WHERE conversation_id IN (SELECT DISTINCT conversation_id FROM staging)
               GROUP BY conversation_id;
             UPDATE all_conversations SET
               conversation_msg_count = t.n,
               is_first = (all_conversations.msg_index = t.first_i),
               is_last = (all_conversations.msg_index = t.last_i),
               updated = t.newest
             FROM touched t WHERE all_conversations.conversation_id = t.conversation_id;
             DROP TABLE staging; DROP TABLE touched;",
        )
        .map_err(|e| self.error(e))?;
        let after: i64 = tx
            .query_row("SELECT count(*) FROM all_conversations", [], |r| r.get(0))
            .map_err(|e| self.error(e))?;
        tx.commit().map_err(|e| self.error(e))?;
        Ok(InsertCounts {
            offered: messages.len(),
            added: usize::try_from(after - before).unwrap_or(0),
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

/// Appends one message to the staging table, computing the derived columns.
/// Timestamps go in as ISO strings and DuckDB casts them to `TIMESTAMP`.
fn append(app: &mut duckdb::Appender<'_>, m: &Message) -> duckdb::Result<()> {
    let ts = m.timestamp.naive_utc();
    let ts_text = ts.format("%Y-%m-%d %H:%M:%S%.6f").to_string();
    let flag = |b: bool| i32::from(b);
    let word_count = i64::try_from(m.content.split_whitespace().count()).unwrap_or(i64::MAX);
    let char_count = i64::try_from(m.content.chars().count()).unwrap_or(i64::MAX);
    app.append_row(params![
        m.source,
        m.model,
        m.project,
        m.conversation_id,
        m.conversation_title,
        ts_text,
        ts_text,
        ts.year(),
        ts.month(),
        ts.format("%A").to_string(),
        ts.hour(),
        m.message_id,
        m.parent_id,
        m.msg_index,
        (!m.timestamp_is_fallback).then(|| ts_text.clone()),
        m.timestamp_is_fallback,
        m.role,
        m.content_type,
        false,
        false,
        word_count,
        char_count,
        0,
        flag(m.content.contains("```")),
        flag(m.content.contains("http://") || m.content.contains("https://")),
        flag(m.content.contains('?')),
        flag(m.has_attachment),
        flag(m.has_citation),
        m.content,
        if m.timestamp_is_fallback {
            "conversation"
        } else {
            "message"
        },
    ])
}
