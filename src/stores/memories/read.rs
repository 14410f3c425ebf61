//! Reads of single memories and of counts through the store's connection, and the
//! `memory_links` relations of given ids (what `memo-search` and recall attach to hits).

use rusqlite::{params_from_iter, Connection, OptionalExtension};

use super::schema::{json_list, parse_time, REL_CONVERSATION, REL_SUPERSEDES};
use super::{Memory, MemoryStore, StoreError};

/// A memory's embedding as read back for vector search.
#[derive(Debug, Clone)]
pub struct StoredEmbedding {
    /// Row id in `memories` (join key with FTS results).
    pub rowid: i64,
    /// The vector (L2-normalised when written by [`MemoryStore::set_embedding`]).
    pub vector: Vec<f32>,
}

impl MemoryStore {
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
pub(super) fn superseded_ids(
    conn: &Connection,
) -> Result<std::collections::HashSet<String>, rusqlite::Error> {
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
