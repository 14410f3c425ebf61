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
//!   `temp.memories_fts_delta` ([`fts::CREATE_INSTANCE_TABLE`]), where the text of rows added
//!   since is tokenized again for [`fts::load_rows`].
//! - `store_meta`: `(key, value)`; key `secrets` records whether the text was redacted
//!   before it was stored ([`crate::redact::at_store::Secrets`]). Stores written
//!   before it hold none and count as not redacted.
//!
//! Engines open the store with [`MemoryStore::open_ro`] (SQLite read-only flags plus
//! `PRAGMA query_only`): a search never changes the file. Writers use
//! [`MemoryStore::open_rw`] and [`MemoryStore::upsert`]; re-inserting an unchanged
//! memory is a no-op, so imports are idempotent.
//!
//!
//! One concern per file: `schema` (the layout and stored value forms), `open`
//! (connections), `write`, `read`, `snapshot` (the in-memory [`SearchIndex`]),
//! `neighbours`, [`fts`] (postings read from FTS5), [`save`] (`memo-save`'s writer)
//! and `secrets` (the redaction mark, redacting in place).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::Connection;

use super::StoreError;
pub use crate::model::Memory;

pub mod fts;
mod neighbours;
mod open;
mod read;
pub mod save;
mod schema;
mod secrets;
mod snapshot;
#[cfg(test)]
mod tests;
mod write;

pub use neighbours::{Neighbours, SESSION_GAP_SECS};
use open::sqlite_error;
pub use open::{query_connection, recover_hot_journal};
pub use read::{has_links_table, links_of, Links, StoredEmbedding};
pub use schema::{
    decode_vector, encode_vector, format_time, json_list, parse_time, CHANGE_LOG_KEEP,
    REL_CONVERSATION, REL_SUPERSEDES, TIME_FORMAT,
};
pub use snapshot::{sequence_sql, Parts, Refresh, SearchIndex, MAX_REFRESH_ROWS, SEQUENCE_SQL};
pub use write::Upsert;

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

    /// Wraps a SQLite error with this store's path.
    pub fn error(&self, source: rusqlite::Error) -> StoreError {
        sqlite_error(&self.path, source)
    }
}
