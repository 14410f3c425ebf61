//! Importing brain-mcp's `all_conversations.parquet` through DuckDB `read_parquet`.

use std::path::{Path, PathBuf};

use duckdb::params;

use super::{ConversationStore, FileBatch, FileState, Previous, StoredBatch, COLUMNS};
use crate::stores::StoreError;

impl ConversationStore {
    /// Imports a Parquet file shaped like `all_conversations` (brain-mcp's
    /// `all_conversations.parquet`) in one transaction, through DuckDB `read_parquet`.
    /// Columns `source`, `conversation_id`, `message_id`, `role`, `content` and
    /// `created` are required; any other column of [`COLUMNS`] the file lacks is derived
    /// (`year`… from `created`, `msg_index` by time within the conversation, flags from
    /// the content) or defaulted (`is_injected` false, `temporal_precision` `message`).
    /// Stored keys are ignored, as by [`Self::insert`]. With `state`, the file's
    /// [`FileState`] and the conversations it holds are recorded in the same
    /// transaction (as [`Self::store_file`] does), and `previous` says what to do with
    /// the rows an earlier version of the file stored. With `redact`, secrets in the
    /// staged rows' text and titles are replaced before they are merged
    /// ([`crate::redact::at_store`]), counted in [`StoredBatch::secrets_redacted`].
    ///
    /// # Errors
    /// [`StoreError::DuckDb`] when the file cannot be read or lacks a required column;
    /// nothing is stored then.
    pub fn import_parquet(
        &self,
        parquet: &Path,
        state: Option<&FileState>,
        previous: Previous,
        redact: bool,
    ) -> Result<StoredBatch, StoreError> {
        let mut forgotten = Vec::new();
        let source = format!(
            "read_parquet('{}')",
            parquet.to_string_lossy().replace('\'', "''")
        );
        let mut conn = self.connection()?;
        let tx = conn.transaction().map_err(|e| self.error(e))?;
        let present: std::collections::HashSet<String> = {
            let mut stmt = tx
                .prepare(&format!(
                    "SELECT column_name FROM (DESCRIBE SELECT * FROM {source})"
                ))
                .map_err(|e| self.error(e))?;
            let names = stmt
                .query_map([], |r| r.get::<_, String>(0))
                .map_err(|e| self.error(e))?
                .collect::<Result<_, _>>()
                .map_err(|e| self.error(e))?;
            names
        };
        let derived = |column: &str| -> &'static str {
            match column {
                "updated" | "msg_timestamp" => "created",
                "year" => "year(created)",
                "month" => "month(created)",
                "day_of_week" => "dayname(created)",
                "hour" => "hour(created)",
                "msg_index" => {
                    "row_number() OVER (PARTITION BY source, conversation_id ORDER BY created, message_id) - 1"
                }
                "timestamp_is_fallback" | "is_first" | "is_last" | "is_injected" => "false",
                "content_type" => "'text'",
                "word_count" => "len(string_split_regex(trim(content), '\\s+')) * (trim(content) <> '')::INT",
                "char_count" => "length(content)",
                "conversation_msg_count" => "0",
                "has_code" => "(content LIKE '%```%')::INT",
                "has_url" => "(content LIKE '%http://%' OR content LIKE '%https://%')::INT",
                "has_question" => "(content LIKE '%?%')::INT",
                "has_attachment" | "has_citation" => "0",
                "temporal_precision" => "'message'",
                _ => "NULL",
            }
        };
        let list: Vec<String> = COLUMNS
            .iter()
            .map(|c| {
                if present.contains(*c) {
                    format!("\"{c}\"")
                } else {
                    format!("{} AS \"{c}\"", derived(c))
                }
            })
            .collect();
        tx.execute_batch(&format!(
            "CREATE OR REPLACE TEMP TABLE staging AS SELECT * FROM all_conversations LIMIT 0;
             INSERT INTO staging SELECT {} FROM (SELECT * REPLACE (CAST(created AS TIMESTAMP) AS created) FROM {source})",
            list.join(", ")
        ))
        .map_err(|e| self.error(e))?;
        let secrets_redacted = if redact {
            let key = crate::redact::ids::IdKey::of_store(&self.path)?;
            super::secrets::redact_rows(&tx, "staging", &key)
                .map_err(|e| self.error(e))?
                .1
        } else {
            0
        };
        let offered: i64 = tx
            .query_row("SELECT count(*) FROM staging", [], |r| r.get(0))
            .map_err(|e| self.error(e))?;
        if let (Some(state), Previous::Replace) = (state, previous) {
            tx.execute_batch(
                "CREATE OR REPLACE TEMP TABLE rewritten AS
                   SELECT DISTINCT source, conversation_id FROM staging",
            )
            .map_err(|e| self.error(e))?;
            forgotten = self.forget_previous(&tx, &state.path)?;
        }
        if let Some(state) = state {
            tx.execute(
                "INSERT OR IGNORE INTO ingest_file_conversations
                   SELECT DISTINCT ?, source, conversation_id FROM staging",
                params![state.path],
            )
            .map_err(|e| self.error(e))?;
            let state = FileState {
                messages: u64::try_from(offered).unwrap_or(0),
                ..state.clone()
            };
            // No messages: the conversation list was written just above.
            self.record_files(
                &tx,
                &[FileBatch {
                    messages: &[],
                    state: &state,
                    previous,
                }],
            )?;
        }
        let staged: Vec<(String, String)> = {
            let mut stmt = tx
                .prepare("SELECT DISTINCT source, conversation_id FROM staging")
                .map_err(|e| self.error(e))?;
            let pairs = stmt
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(|e| self.error(e))?
                .collect::<Result<_, _>>()
                .map_err(|e| self.error(e))?;
            pairs
        };
        let counts = self.merge_staging(&tx, usize::try_from(offered).unwrap_or(0))?;
        // The staged conversations include every one `forget_previous` emptied.
        self.refresh_summaries(&tx, staged.iter().map(|(s, c)| (s.as_str(), c.as_str())))?;
        tx.commit().map_err(|e| self.error(e))?;
        self.touched
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend(staged);
        Ok(StoredBatch {
            counts: vec![counts],
            forgotten: forgotten.into_iter().map(PathBuf::from).collect(),
            secrets_redacted,
        })
    }
}
