//! The change log of the conversations: table `conversation_changes` (`source`,
//! `conversation_id`, `seq`), one row per conversation holding the number of the last
//! transaction that added, changed or deleted any of its messages, so a reader that
//! remembers a number learns which conversations changed since without reading them
//! (`skills archive push` keeps its per-conversation fingerprints this way,
//! [`crate::archive::push`]).
//!
//! - **Written in the same transaction as the messages**: every writer ends by
//!   recomputing the summaries of the conversations it touched
//!   ([`ConversationStore::refresh_summaries`](super::ConversationStore)), which calls
//!   [`record`] with the same conversations; a conversation left without messages keeps
//!   its row (a reader learns it is gone).
//! - **Numbers follow commit order**: the number is taken by updating one row of
//!   `store_meta` (key [`SEQ_KEY`]), so two writers at once conflict and one retries
//!   rather than commit numbers out of order.
//! - **The log's identity**: `store_meta` key [`ID_KEY`] holds a random id made with
//!   the log; a number means nothing for another log (a store made again from
//!   scratch numbers from 1 again).
//! - A store written before the log gets it at its next writable open ([`init`]),
//!   every conversation it holds recorded at number 1.

use duckdb::{params, Connection, OptionalExt as _};

/// `store_meta` key of the log's random id.
pub const ID_KEY: &str = "conversation_changes_id";

/// `store_meta` key of the last number given.
pub const SEQ_KEY: &str = "conversation_changes_seq";

/// At a writable open (after `all_conversations` exists): creates the log when
/// missing, recording every stored conversation at number 1.
pub(super) fn init(conn: &Connection) -> duckdb::Result<()> {
    conn.execute_batch(super::secrets::CREATE)?;
    let exists: bool = conn.query_row(
        "SELECT count(*) > 0 FROM duckdb_tables()
         WHERE database_name = current_database() AND schema_name = 'main'
           AND table_name = 'conversation_changes'",
        [],
        |r| r.get(0),
    )?;
    let keys: i64 = conn.query_row(
        &format!("SELECT count(*) FROM store_meta WHERE key IN ('{ID_KEY}', '{SEQ_KEY}')"),
        [],
        |r| r.get(0),
    )?;
    if exists && keys == 2 {
        return Ok(());
    }
    if exists {
        // The keys were lost (`store_meta` dropped): a new id, so no reader takes its
        // old numbers for this log's, numbered on from the rows kept.
        return conn.execute_batch(&format!(
            "BEGIN TRANSACTION;
             DELETE FROM store_meta WHERE key IN ('{ID_KEY}', '{SEQ_KEY}');
             INSERT INTO store_meta
                 SELECT '{ID_KEY}', uuid()::VARCHAR
                 UNION ALL
                 SELECT '{SEQ_KEY}', (coalesce(max(seq), 0) + 1)::VARCHAR FROM conversation_changes;
             COMMIT;"
        ));
    }
    // One transaction: a log never exists without its id, number and rows.
    conn.execute_batch(&format!(
        "BEGIN TRANSACTION;
         CREATE TABLE conversation_changes (
             source VARCHAR NOT NULL,
             conversation_id VARCHAR NOT NULL,
             seq BIGINT NOT NULL
         );
         INSERT INTO conversation_changes
             SELECT DISTINCT source, conversation_id, 1 FROM all_conversations;
         DELETE FROM store_meta WHERE key IN ('{ID_KEY}', '{SEQ_KEY}');
         INSERT INTO store_meta VALUES ('{ID_KEY}', uuid()::VARCHAR), ('{SEQ_KEY}', '1');
         COMMIT;"
    ))
}

/// Inside a writer's transaction: records the conversations of temp table `touched`
/// (`source`, `conversation_id`) as changed, under a new number.
pub(super) fn record(tx: &Connection, touched: &str) -> duckdb::Result<()> {
    // No number (its key lost since the open): nothing recorded, and readers find no
    // position ([`position`]), so they trust no kept state until a writable open
    // gives the log a new id.
    let Some(seq) = tx
        .query_row(
            &format!(
                "UPDATE store_meta SET value = (value::BIGINT + 1)::VARCHAR
                 WHERE key = '{SEQ_KEY}' RETURNING value::BIGINT"
            ),
            [],
            |r| r.get::<_, i64>(0),
        )
        .optional()?
    else {
        return Ok(());
    };
    tx.execute_batch(&format!(
        "DELETE FROM conversation_changes c USING {touched} t
           WHERE c.source = t.source AND c.conversation_id = t.conversation_id;"
    ))?;
    tx.execute(
        &format!(
            "INSERT INTO conversation_changes
               SELECT DISTINCT source, conversation_id, ? FROM {touched}"
        ),
        params![seq],
    )?;
    Ok(())
}

/// Where the log stands: its id and the last number given; `None` for a store without
/// the log (written by an older version and not opened writable since).
///
/// # Errors
/// DuckDB's.
pub fn position(conn: &Connection) -> duckdb::Result<Option<(String, i64)>> {
    let has_meta: bool = conn.query_row(
        "SELECT count(*) = 2 FROM duckdb_tables()
         WHERE database_name = current_database() AND schema_name = 'main'
           AND table_name IN ('store_meta', 'conversation_changes')",
        [],
        |r| r.get(0),
    )?;
    if !has_meta {
        return Ok(None);
    }
    conn.query_row(
        &format!(
            "SELECT i.value, s.value::BIGINT FROM store_meta i, store_meta s
             WHERE i.key = '{ID_KEY}' AND s.key = '{SEQ_KEY}'"
        ),
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .optional()
}
