//! Secrets in the stored text ([`crate::redact::at_store`]): the store's
//! [`Secrets`] mark, kept in table `store_meta` (key
//! [`MARK_KEY`](crate::redact::at_store::MARK_KEY)), and redacting rows in place — a
//! Parquet import's staged rows, or every stored row of a store imported before
//! redaction at store was the default (`skills ingest --redact-stored`).
//!
//! A store is marked `redacted` when a writable open finds it holding no message, and
//! `kept` when an import stores text with its secrets; a store holding messages but no
//! mark was written by a version that stored text as written.

use duckdb::{params, Connection, OptionalExt as _};

use super::{duck, ConversationStore};
use crate::redact::at_store::{Secrets, COUNT_KEY, MARK_KEY};
use crate::stores::StoreError;

pub(super) const CREATE: &str =
    "CREATE TABLE IF NOT EXISTS store_meta (key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL)";

/// At a writable open: creates the mark's table and marks a store that holds no
/// message yet `redacted` (a mark already there is kept).
pub(super) fn init(conn: &Connection) -> duckdb::Result<()> {
    conn.execute_batch(CREATE)?;
    let empty: bool = conn.query_row(
        "SELECT count(*) = 0 FROM (SELECT 1 FROM all_conversations LIMIT 1)",
        [],
        |r| r.get(0),
    )?;
    if empty {
        conn.execute(
            "INSERT INTO store_meta VALUES (?, ?) ON CONFLICT DO NOTHING",
            params![MARK_KEY, Secrets::Redacted.mark()],
        )?;
    }
    Ok(())
}

/// The id and metadata columns redacted with keyed markers ([`crate::redact::ids`]).
const ID_COLUMNS: [&str; 6] = [
    "source",
    "model",
    "project",
    "conversation_id",
    "message_id",
    "parent_id",
];

/// Redacts `content` and `conversation_title` of every row of `table` (in `conn`'s
/// transaction) whose text holds a secret, and its id and metadata columns
/// ([`ID_COLUMNS`]) with markers keyed by `key`; returns the changed rows' `(source,
/// conversation_id)` (as they were and as they are) and how many secrets were replaced.
pub(super) fn redact_rows(
    conn: &Connection,
    table: &str,
    key: &crate::redact::ids::IdKey,
) -> duckdb::Result<(Vec<(String, String)>, usize)> {
    let Some(redactor) = crate::redact::Redactor::global() else {
        return Ok((Vec::new(), 0));
    };
    let mut changed = Vec::new();
    let mut secrets = 0;
    {
        let mut stmt = conn.prepare(&format!(
            "SELECT rowid, content, conversation_title, {} FROM {table}",
            ID_COLUMNS.join(", ")
        ))?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let content: String = row.get(1)?;
            let title: Option<String> = row.get(2)?;
            let body = redactor.redact(&content);
            let head = title.as_deref().map(|t| redactor.redact(t));
            let mut found = body.count + head.as_ref().map_or(0, |h| h.count);
            let mut ids: Vec<Option<String>> = Vec::with_capacity(ID_COLUMNS.len());
            for i in 0..ID_COLUMNS.len() {
                let mut v: Option<String> = row.get(3 + i)?;
                found += crate::redact::at_store::opt_id_in_place(&mut v, key);
                ids.push(v);
            }
            if found > 0 {
                secrets += found;
                changed.push((
                    row.get::<_, i64>(0)?,
                    (row.get::<_, String>(3)?, row.get::<_, String>(6)?),
                    body.text.into_owned(),
                    head.map(|h| h.text.into_owned()),
                    ids,
                ));
            }
        }
    }
    // The counts follow the text, as `rows` computes them for a new message (the
    // characters cut at import, beyond the stored text, still count).
    let sets: Vec<String> = ID_COLUMNS.iter().map(|c| format!("{c} = ?")).collect();
    let mut update = conn.prepare(&format!(
        "UPDATE {table} SET content = ?, conversation_title = ?, word_count = ?, \
         char_count = ? + greatest(char_count - length(content), 0), {} WHERE rowid = ?",
        sets.join(", ")
    ))?;
    let mut touched = Vec::with_capacity(changed.len());
    for (rowid, old, content, title, ids) in changed {
        let words = i64::try_from(content.split_whitespace().count()).unwrap_or(i64::MAX);
        let chars = i64::try_from(content.chars().count()).unwrap_or(i64::MAX);
        let mut values: Vec<&dyn duckdb::ToSql> = vec![&content, &title, &words, &chars];
        for v in &ids {
            values.push(v);
        }
        values.push(&rowid);
        update.execute(values.as_slice())?;
        let new = (
            ids[0].clone().unwrap_or_default(),
            ids[3].clone().unwrap_or_default(),
        );
        if new != old {
            touched.push(new);
        }
        touched.push(old);
    }
    Ok((touched, secrets))
}

/// Redacts `source` and `conversation_id` of the ingest bookkeeping's
/// `ingest_file_conversations` as [`redact_rows`] redacts the messages', so a file
/// imported again replaces the conversations it stored.
fn redact_file_conversations(
    conn: &Connection,
    key: &crate::redact::ids::IdKey,
) -> duckdb::Result<()> {
    let mut changed = Vec::new();
    {
        let mut stmt =
            conn.prepare("SELECT path, source, conversation_id FROM ingest_file_conversations")?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let (path, source, conv): (String, String, String) =
                (row.get(0)?, row.get(1)?, row.get(2)?);
            let (mut s, mut c) = (source.clone(), conv.clone());
            if crate::redact::at_store::id_in_place(&mut s, key)
                + crate::redact::at_store::id_in_place(&mut c, key)
                > 0
            {
                changed.push((path, source, conv, s, c));
            }
        }
    }
    for (path, source, conv, s, c) in changed {
        conn.execute(
            "DELETE FROM ingest_file_conversations WHERE path = ? AND source = ? \
             AND conversation_id = ?",
            params![path, source, conv],
        )?;
        conn.execute(
            "INSERT INTO ingest_file_conversations VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            params![path, s, c],
        )?;
    }
    Ok(())
}

impl ConversationStore {
    /// The store's [`Secrets`] mark (also for a read-only store).
    ///
    /// # Errors
    /// [`StoreError::DuckDb`].
    pub fn secrets(&self) -> Result<Secrets, StoreError> {
        let mark = self.meta(MARK_KEY)?;
        Ok(Secrets::from_mark(mark.as_deref(), self.count()? == 0))
    }

    /// Secrets replaced before storing over the store's life (imports that redacted,
    /// and [`ConversationStore::redact_stored`]); 0 for a store written before this
    /// was counted.
    ///
    /// # Errors
    /// [`StoreError::DuckDb`].
    pub fn secrets_redacted(&self) -> Result<u64, StoreError> {
        Ok(self
            .meta(COUNT_KEY)?
            .and_then(|v| v.parse().ok())
            .unwrap_or(0))
    }

    /// Records that text was just stored with its secrets (`--keep-secrets`).
    ///
    /// # Errors
    /// [`StoreError::DuckDb`].
    pub fn mark_secrets_kept(&self) -> Result<(), StoreError> {
        self.set_meta(MARK_KEY, Secrets::Kept.mark())
    }

    /// Adds `n` to [`ConversationStore::secrets_redacted`].
    ///
    /// # Errors
    /// [`StoreError::DuckDb`].
    pub fn count_secrets_redacted(&self, n: usize) -> Result<(), StoreError> {
        if n == 0 {
            return Ok(());
        }
        let total = self.secrets_redacted()?.saturating_add(n as u64);
        self.set_meta(COUNT_KEY, &total.to_string())
    }

    /// `store_meta`'s value of `key` (none in a store written before the table).
    fn meta(&self, key: &str) -> Result<Option<String>, StoreError> {
        let conn = self.connection()?;
        let has_table: bool = conn
            .query_row(
                "SELECT count(*) > 0 FROM duckdb_tables() WHERE table_name = 'store_meta'",
                [],
                |r| r.get(0),
            )
            .map_err(|e| self.error(e))?;
        if !has_table {
            return Ok(None);
        }
        conn.query_row(
            "SELECT value FROM store_meta WHERE key = ?",
            params![key],
            |r| r.get(0),
        )
        .optional()
        .map_err(|e| self.error(e))
    }

    fn set_meta(&self, key: &str, value: &str) -> Result<(), StoreError> {
        let conn = self.connection()?;
        conn.execute_batch(CREATE).map_err(|e| self.error(e))?;
        conn.execute(
            "INSERT INTO store_meta VALUES (?, ?) \
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            params![key, value],
        )
        .map_err(|e| self.error(e))?;
        Ok(())
    }

    /// Redacts every stored message's text and conversation title in place (the same
    /// detectors as at import), and its ids and metadata with keyed markers
    /// ([`crate::redact::ids`]; the ingest bookkeeping's conversation ids follow), in
    /// one transaction, records their conversations for
    /// the search index and embeddings update at close, and marks the store
    /// `redacted`. Returns how many secrets were replaced.
    ///
    /// # Errors
    /// [`StoreError::DuckDb`]; nothing is changed then.
    pub fn redact_stored(&self) -> Result<usize, StoreError> {
        let key = crate::redact::ids::IdKey::of_store(&self.path)?;
        let mut conn = self.connection()?;
        let tx = conn.transaction().map_err(|e| self.error(e))?;
        let (touched, secrets) =
            redact_rows(&tx, "all_conversations", &key).map_err(|e| duck(&self.path, e))?;
        redact_file_conversations(&tx, &key).map_err(|e| duck(&self.path, e))?;
        // Both the ids as they were (their rows are gone) and as they are now.
        self.refresh_summaries(&tx, touched.iter().map(|(s, c)| (s.as_str(), c.as_str())))?;
        tx.commit().map_err(|e| self.error(e))?;
        self.touched
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend(touched);
        self.set_meta(MARK_KEY, Secrets::Redacted.mark())?;
        self.count_secrets_redacted(secrets)?;
        Ok(secrets)
    }
}
