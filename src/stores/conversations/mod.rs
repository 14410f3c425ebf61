//! DuckDB store of raw messages: table `all_conversations` with brain-mcp's L0 columns.
//!
//! Times are stored as `TIMESTAMP` values in UTC. `created` is the message time (the
//! conversation's time when the source had none, see `temporal_precision`), `updated`
//! the time of the conversation's newest message. Rows are keyed by
//! (`source`, `conversation_id`, `message_id`) — sources reuse node ids such as `msg-1`
//! across conversations — so importing the same files twice adds nothing. The key is
//! enforced by this module's writers, not by a `PRIMARY KEY`: DuckDB's index over three
//! `VARCHAR`s made each ingest commit several times slower and the file twice as big.
//! Stores created with that index keep it, which changes nothing but speed. One
//! single-column index is kept, on `conversation_id`, for reading one conversation
//! (get-conversation filters by it alone first): 13 % more file on the generated 1M
//! store, no measurable cost to inserting it (docs/performance.md).
//!
//! Column `is_injected` (last, added to older stores when opened writable) marks user
//! messages a harness injected (see `ingest::injected`); user-role search
//! leaves them out.
//!
//! Layout, one concern per file, each an `impl` block of [`ConversationStore`]:
//! `open` (the writable, read-only and in-memory opens, connections), `insert`
//! (staging and merging rows under the key rule), `files` (the ingest bookkeeping:
//! file states and batches of files in one transaction), `parquet` (the Parquet
//! import), `secrets` (the mark of whether secrets were redacted before storing,
//! redacting rows in place), `close` (bringing the [`index`] and the [`embeddings`] up to date and
//! publishing them); `schema` the table, `rows` how one message becomes a row,
//! `lock` the waits for other processes' file locks, `summary` the per-conversation and
//! per-day summary tables the browse skills read, kept exact by every writer.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use duckdb::Connection;

use super::StoreError;
use crate::cancel::{Cancel, OnStop};

mod attach;
pub mod changes;
mod close;
pub mod embeddings;
mod files;
pub mod index;
mod insert;
mod lock;
mod open;
mod parquet;
pub mod project;
mod rows;
mod schema;
mod secrets;
pub mod summary;

/// Writable opens of conversation stores in this process so far: a read-only
/// attachment kept between calls is not reused after one (DuckDB's file lock does not
/// keep a writer of the same process out), see `attach`.
static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

pub use close::CloseReport;
pub use files::{FileBatch, FileState, Previous, StoredBatch};
pub use insert::InsertCounts;
pub use lock::lock_holder;
pub use open::Pooled;
pub use schema::COLUMNS;

use index::Touched;

/// A DuckDB database file holding `all_conversations`.
///
/// Opened either writable ([`ConversationStore::open_rw`], for ingest) or read-only
/// ([`ConversationStore::open_ro`], for engines). Queries take a cloned connection, so
/// no lock is held while a query runs.
pub struct ConversationStore {
    path: PathBuf,
    /// The database; `None` after [`ConversationStore::release`] until the next query.
    conn: Mutex<Option<Connection>>,
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
    /// A read-only store's attachment to a kept instance (`attach`), detached when
    /// the store is dropped (after `conn`, declared before it).
    attached: Option<attach::Attached>,
}

impl ConversationStore {
    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Wraps a DuckDB error with this store's path.
    pub fn error(&self, e: duckdb::Error) -> StoreError {
        duck(&self.path, e)
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
