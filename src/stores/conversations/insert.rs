//! Inserting messages: rows staged in a temp table, merged into `all_conversations`
//! under the key rule (`source`, `conversation_id`, `message_id` stored once), the
//! touched conversations' columns recomputed, and the conversations recorded as
//! changed for the index update at close.

use super::rows::append;
use super::ConversationStore;
use crate::model::Message;
use crate::stores::StoreError;

/// Counts returned by [`ConversationStore::insert`].
#[derive(Debug, Default, Clone, Copy, serde::Serialize)]
pub struct InsertCounts {
    /// Rows offered.
    pub offered: usize,
    /// Rows actually added (offered minus rows whose key was already stored).
    pub added: usize,
}

impl ConversationStore {
    /// Inserts messages in one transaction; rows whose key (`source`, `conversation_id`, `message_id`) is already stored
    /// are ignored. Afterwards the per-conversation columns (`is_first`, `is_last`,
    /// `conversation_msg_count`, `updated`) are recomputed for the touched conversations,
    /// and a row without `conversation_title` takes the conversation's latest title (lines
    /// appended to a session do not repeat it).
    ///
    /// # Errors
    /// [`StoreError::DuckDb`]; on error nothing of this batch is stored.
    pub fn insert(&self, messages: &[Message]) -> Result<InsertCounts, StoreError> {
        if messages.is_empty() {
            return Ok(InsertCounts::default());
        }
        let mut conn = self.connection()?;
        let tx = conn.transaction().map_err(|e| self.error(e))?;
        let counts = self.insert_in(&tx, messages)?;
        self.refresh_summaries(
            &tx,
            messages
                .iter()
                .map(|m| (m.source.as_str(), m.conversation_id.as_str())),
        )?;
        tx.commit().map_err(|e| self.error(e))?;
        self.touch(messages.iter());
        Ok(counts)
    }

    /// The body of [`Self::insert`] inside the caller's transaction.
    fn insert_in(
        &self,
        tx: &duckdb::Transaction<'_>,
        messages: &[Message],
    ) -> Result<InsertCounts, StoreError> {
        if messages.is_empty() {
            return Ok(InsertCounts::default());
        }
        self.stage(tx, messages.iter())?;
        self.merge_staging(tx, messages.len())
    }

    /// Fills temp table `staging` (shaped like `all_conversations`) with `messages`;
    /// their per-conversation columns are placeholders.
    pub(super) fn stage<'m>(
        &self,
        tx: &duckdb::Transaction<'_>,
        messages: impl Iterator<Item = &'m Message>,
    ) -> Result<(), StoreError> {
        tx.execute_batch(
            "CREATE OR REPLACE TEMP TABLE staging AS SELECT * FROM all_conversations LIMIT 0",
        )
        .map_err(|e| self.error(e))?;
        let mut app = tx.appender("staging").map_err(|e| self.error(e))?;
        for m in messages {
            append(&mut app, m, None).map_err(|e| self.error(e))?;
        }
        app.flush().map_err(|e| self.error(e))
    }

    /// Moves temp table `staging` into the table, leaving out rows whose key
    /// (`source`, `conversation_id`, `message_id`) is stored or repeated in `staging`
    /// (the first by `msg_index` is kept), and recomputes the touched conversations'
    /// columns. The key is enforced here rather than by a `PRIMARY KEY`: DuckDB's
    /// index over three `VARCHAR`s made every ingest commit several times slower.
    pub(super) fn merge_staging(
        &self,
        tx: &duckdb::Transaction<'_>,
        offered: usize,
    ) -> Result<InsertCounts, StoreError> {
        tx.execute_batch(
            "CREATE OR REPLACE TEMP TABLE fresh AS
               SELECT * FROM staging s
               WHERE NOT EXISTS (
                 SELECT 1 FROM all_conversations a
                 WHERE a.source = s.source AND a.conversation_id = s.conversation_id
                   AND a.message_id = s.message_id)
               QUALIFY row_number() OVER (
                 PARTITION BY source, conversation_id, message_id ORDER BY msg_index) = 1;
             DROP TABLE staging;
             ALTER TABLE fresh RENAME TO staging;",
        )
        .map_err(|e| self.error(e))?;
        // Common case: none of the staged conversations is stored yet, so their columns
        // are computed on the staged rows alone and the big table is only appended to.
        let stored: bool = tx
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM all_conversations a
                 SEMI JOIN (SELECT DISTINCT source, conversation_id FROM staging) s
                   ON a.source = s.source AND a.conversation_id = s.conversation_id)",
                [],
                |r| r.get(0),
            )
            .map_err(|e| self.error(e))?;
        let added = if stored {
            let added = tx
                .execute("INSERT INTO all_conversations SELECT * FROM staging", [])
                .map_err(|e| self.error(e))?;
            self.refresh_conversations(tx, "all_conversations")?;
            added
        } else {
            self.refresh_conversations(tx, "staging")?;
            tx.execute("INSERT INTO all_conversations SELECT * FROM staging", [])
                .map_err(|e| self.error(e))?
        };
        tx.execute_batch("DROP TABLE staging")
            .map_err(|e| self.error(e))?;
        Ok(InsertCounts { offered, added })
    }

    /// Recomputes `conversation_msg_count`, `is_first`, `is_last`, `updated` and
    /// missing titles, in table `target`, for the conversations that have rows in temp
    /// table `staging`.
    pub(super) fn refresh_conversations(
        &self,
        tx: &duckdb::Transaction<'_>,
        target: &str,
    ) -> Result<(), StoreError> {
        tx.execute_batch(&format!(
            "CREATE OR REPLACE TEMP TABLE touched AS
               SELECT source, conversation_id, count(*) AS n, min(msg_index) AS first_i,
                      max(msg_index) AS last_i, max(created) AS newest,
                      arg_max(conversation_title, msg_index)
                        FILTER (WHERE conversation_title IS NOT NULL) AS title
               FROM {target} c
               WHERE (c.source, c.conversation_id) IN (SELECT DISTINCT source, conversation_id FROM staging)
               GROUP BY source, conversation_id;
             UPDATE {target} SET
               conversation_msg_count = t.n,
               is_first = ({target}.msg_index = t.first_i),
               is_last = ({target}.msg_index = t.last_i),
               updated = t.newest,
               conversation_title = coalesce({target}.conversation_title, t.title)
             FROM touched t
             WHERE {target}.source = t.source AND {target}.conversation_id = t.conversation_id;
             DROP TABLE touched;"
        ))
        .map_err(|e| self.error(e))
    }

    /// Records the conversations of `messages` as changed, for the index update.
    pub(super) fn touch<'m>(&self, messages: impl Iterator<Item = &'m Message>) {
        let mut touched = self
            .touched
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for m in messages {
            if !touched.contains(&(m.source.clone(), m.conversation_id.clone())) {
                touched.insert((m.source.clone(), m.conversation_id.clone()));
            }
        }
    }
}
