//! What the memories file holds and how values are written in it: the schema (tables,
//! FTS5, triggers of the change log), the change log's bounds, the `memory_links`
//! relations, and the stored forms of times, lists and vectors. Every other file of the
//! store reads and writes through these, so the layout is stated once.

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension};

pub(super) const SCHEMA: &str = "
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
CREATE VIRTUAL TABLE IF NOT EXISTS memories_stem USING fts5(
    title, tags, body, tokenize = 'porter unicode61 remove_diacritics 2'
);
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

/// Deletes all but the newest [`CHANGE_LOG_KEEP`] entries of `memories_changes`, inside
/// the writer's transaction.
pub(super) fn trim_change_log(tx: &rusqlite::Transaction<'_>) -> Result<(), rusqlite::Error> {
    tx.execute(
        "DELETE FROM memories_changes WHERE seq <= (SELECT max(seq) FROM memories_changes) - ?1",
        [CHANGE_LOG_KEEP],
    )?;
    Ok(())
}

/// `(oldest, newest)` `seq` of `memories_changes` (`(0, 0)` when empty); `None` when
/// the store has no such table (written before it existed).
pub(super) fn change_range(conn: &Connection) -> Result<Option<(i64, i64)>, rusqlite::Error> {
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
