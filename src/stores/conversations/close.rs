//! Closing a writable store: the search index and (when asked for) the embeddings
//! brought up to date with what this handle wrote, the database checkpointed and
//! closed, then both published.

use std::sync::Arc;

use super::embeddings::{self, EmbedReport, UnitSpec};
use super::index::UpdateReport;
use super::lock::{wait_for_lock, WRITE_LOCK_WAIT};
use super::{duck, ConversationStore};
use crate::embed::Embedder;
use crate::stores::StoreError;

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

impl ConversationStore {
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
        // Until this returns (after publishing): readers finding the index stale wait
        // for it from here on, not while the import still runs.
        let _closing = super::index::closing(&path);
        // Released ([`ConversationStore::release`]) and not used since: open it again.
        let conn = match conn {
            Some(conn) => conn,
            None => wait_for_lock(&path, WRITE_LOCK_WAIT, || duckdb::Connection::open(&path))?,
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
        // A new identity when rows were written: two copies of a store written since
        // never pass for each other (segments' `StoreContent`).
        if !touched.is_empty() {
            conn.execute_batch("UPDATE store_identity SET id = uuid()::VARCHAR")
                .map_err(|e| duck(&path, e))?;
        }
        let store_id = crate::stores::segments::identity_in(&conn);
        conn.execute_batch("CHECKPOINT")
            .map_err(|e| duck(&path, e))?;
        conn.close().map_err(|(_, e)| duck(&path, e))?;
        // The embeddings first: the index writer holds the index lock until it
        // publishes, and a reader waiting for that lock then finds both current.
        let embeddings = embedded.map(|(w, done)| {
            let (m, r) = done.map_err(|e| e.to_string())?;
            w.publish(m, store_id.clone()).map_err(|e| e.to_string())?;
            Ok(r)
        });
        writer
            .publish(manifest, store_id)
            .map_err(|e| StoreError::Io(std::io::Error::other(format!("search index: {e}"))))?;
        Ok(CloseReport {
            index: Some(report),
            embeddings,
        })
    }
}
