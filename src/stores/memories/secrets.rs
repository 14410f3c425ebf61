//! Secrets in the stored memories ([`crate::redact::at_store`]): the store's
//! [`Secrets`] mark, kept in table `store_meta` (key
//! [`MARK_KEY`](crate::redact::at_store::MARK_KEY)), and redacting the stored memories
//! in place (`skills ingest --redact-stored`).
//!
//! A store is marked `redacted` when a writable open finds it holding no memory, and
//! `kept` when a memory is stored with its secrets; a store holding memories but no
//! mark was written by a version that stored text as written.

use rusqlite::{params, Connection, OptionalExtension as _};

use super::MemoryStore;
use crate::redact::at_store::{redact_in_place, Secrets, COUNT_KEY, MARK_KEY};
use crate::stores::StoreError;

const CREATE: &str =
    "CREATE TABLE IF NOT EXISTS store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)";

/// At a writable open: creates the mark's table and marks a store that holds no
/// memory yet `redacted` (a mark already there is kept).
pub(super) fn init(conn: &mut Connection) -> rusqlite::Result<()> {
    conn.execute_batch(CREATE)?;
    // The write lock first, as every write of the store: read-then-write in one
    // autocommit statement failed at once with "database is locked" when another
    // writer opened the file at the same moment, instead of waiting for it.
    let tx = super::write::write_transaction(conn)?;
    tx.execute(
        "INSERT OR IGNORE INTO store_meta SELECT ?1, ?2 WHERE NOT EXISTS (SELECT 1 FROM memories)",
        params![MARK_KEY, Secrets::Redacted.mark()],
    )?;
    tx.commit()
}

impl MemoryStore {
    /// The store's [`Secrets`] mark (also for a read-only store).
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn secrets(&self) -> Result<Secrets, StoreError> {
        let mark = self.meta(MARK_KEY)?;
        let empty = self
            .lock()
            .query_row("SELECT 1 FROM memories LIMIT 1", [], |_| Ok(()))
            .optional()
            .map_err(|e| self.error(e))?
            .is_none();
        Ok(Secrets::from_mark(mark.as_deref(), empty))
    }

    /// Secrets replaced before storing over the store's life (imports, saves and
    /// [`MemoryStore::redact_stored`]); 0 for a store written before this was counted.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn secrets_redacted(&self) -> Result<u64, StoreError> {
        Ok(self
            .meta(COUNT_KEY)?
            .and_then(|v| v.parse().ok())
            .unwrap_or(0))
    }

    /// Records that a memory was just stored with its secrets (`--keep-secrets`).
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn mark_secrets_kept(&self) -> Result<(), StoreError> {
        self.set_meta(MARK_KEY, Secrets::Kept.mark())
    }

    /// Adds `n` to [`MemoryStore::secrets_redacted`].
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn count_secrets_redacted(&self, n: usize) -> Result<(), StoreError> {
        if n == 0 {
            return Ok(());
        }
        let total = self.secrets_redacted()?.saturating_add(n as u64);
        self.set_meta(COUNT_KEY, &total.to_string())
    }

    /// `store_meta`'s value of `key` (none in a store written before the table).
    fn meta(&self, key: &str) -> Result<Option<String>, StoreError> {
        let conn = self.lock();
        let has_table = conn
            .query_row(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'store_meta'",
                [],
                |_| Ok(()),
            )
            .optional()
            .map_err(|e| self.error(e))?
            .is_some();
        if !has_table {
            return Ok(None);
        }
        conn.query_row("SELECT value FROM store_meta WHERE key = ?1", [key], |r| {
            r.get(0)
        })
        .optional()
        .map_err(|e| self.error(e))
    }

    fn set_meta(&self, key: &str, value: &str) -> Result<(), StoreError> {
        let conn = self.lock();
        conn.execute_batch(CREATE).map_err(|e| self.error(e))?;
        conn.execute(
            "INSERT OR REPLACE INTO store_meta VALUES (?1, ?2)",
            params![key, value],
        )
        .map_err(|e| self.error(e))?;
        Ok(())
    }

    /// Redacts every stored memory's title and body in place (the same detectors as at
    /// import), and its type, tags, files and origin with keyed markers
    /// ([`super::save::redact_metadata`]; its id is kept), in one transaction, and marks the store `redacted`. A changed memory
    /// keeps its id and loses its embedding, which the next import or
    /// [`crate::ingest::memories::embed_missing`] computes again. Returns how many
    /// secrets were replaced.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`]; nothing is changed then.
    pub fn redact_stored(&self) -> Result<usize, StoreError> {
        let ids: Vec<String> = {
            let conn = self.lock();
            let mut stmt = conn
                .prepare("SELECT id FROM memories")
                .map_err(|e| self.error(e))?;
            let rows = stmt
                .query_map([], |r| r.get(0))
                .map_err(|e| self.error(e))?;
            rows.collect::<Result<_, _>>().map_err(|e| self.error(e))?
        };
        let key = crate::redact::ids::IdKey::of_store(self.path()).map_err(StoreError::Io)?;
        let mut changed = Vec::new();
        let mut secrets = 0;
        for id in ids {
            if let Some(mut memory) = self.get(&id)? {
                // The id stays (links and embeddings name it); the metadata follows.
                let found = redact_in_place(&mut memory.title)
                    + redact_in_place(&mut memory.body)
                    + super::save::redact_metadata(&mut memory, &key);
                if found > 0 {
                    secrets += found;
                    changed.push(memory);
                }
            }
        }
        self.upsert_many(&changed)?;
        self.set_meta(MARK_KEY, Secrets::Redacted.mark())?;
        self.count_secrets_redacted(secrets)?;
        Ok(secrets)
    }
}
