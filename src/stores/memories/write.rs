//! Every write to the memories file: upserts (one or many, in one transaction), the
//! embeddings, and `memo-save`'s memory-plus-links-plus-embedding. Each runs in one
//! `BEGIN IMMEDIATE` transaction and trims the change log before it commits.

use rusqlite::{params, Connection, OptionalExtension};
use sha2::{Digest, Sha256};

use super::schema::{encode_vector, format_time, trim_change_log};
use super::{Memory, MemoryStore, StoreError};
use crate::search::vectors::normalized;

/// A write transaction that takes SQLite's write lock at `BEGIN IMMEDIATE`: a writer
/// that began deferred, read, and then wrote would fail at once with "database is
/// locked" when another process writes at the same moment (the read-to-write upgrade
/// cannot wait), while `IMMEDIATE` waits out the other writer within the busy timeout.
pub(super) fn write_transaction(
    conn: &mut Connection,
) -> Result<rusqlite::Transaction<'_>, rusqlite::Error> {
    conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
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

impl MemoryStore {
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
            tx.execute("DELETE FROM memories_stem WHERE rowid = ?1", [rowid])?;
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
        let tags = memory.tags.join(" ");
        for table in ["memories_fts", "memories_stem"] {
            tx.execute(
                &format!("INSERT INTO {table}(rowid, title, tags, body) VALUES (?1, ?2, ?3, ?4)"),
                params![rowid, memory.title, tags, memory.body],
            )?;
        }
    }
    Ok(outcome)
}

/// The stored `embedding` blob of a memory's chunk vectors: each L2-normalised, one
/// after the other, little-endian `f32`.
fn embedding_blob(vectors: &[Vec<f32>]) -> Vec<u8> {
    vectors
        .iter()
        .flat_map(|v| encode_vector(&normalized(v)))
        .collect()
}
