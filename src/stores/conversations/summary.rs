//! Summary tables kept beside `all_conversations` for the browse pages (issue 41):
//! `conversation_summary`, one row per conversation; `conversation_days`, one row per
//! conversation, UTC day and project; `conversation_projects`, one per conversation and
//! project, with the conversation's preview (a project's list as a top-N);
//! `daily_counts` and `monthly_counts`, messages and conversations per UTC day (month)
//! and source; `project_monthly_counts`, the same per UTC month, project and source (a
//! project page's chart); `project_counts`, per project and source. The list, project and activity skills read
//! them instead of grouping every message: at 1M messages grouping all rows took
//! 17–133 ms a query, the summaries a few ms (docs/performance.md "Browse pages at 1M
//! messages").
//!
//! Both are kept exact by the writers: every transaction that changes messages ends
//! by recomputing the rows of the conversations it touched ([`ConversationStore::
//! refresh_summaries`]) from `all_conversations`, so the summaries are always the
//! aggregates below over the stored messages. A store written before they existed gets
//! them built on its next writable open; read-only, it gets views of the same
//! aggregates for the connection ([`fallback_views`]), slower but the same rows.

use duckdb::Connection;

use super::ConversationStore;
use crate::stores::StoreError;

/// Characters of the first user message kept as the preview (list-conversations'
/// `preview_chars` is at most this).
pub const PREVIEW_CHARS: usize = 2000;

/// The per-conversation aggregate, over the messages of `from` (a table or a
/// filtered sub-query aliased `a`).
fn conversations_query(from: &str) -> String {
    conversations_query_with(from, "is_injected")
}

/// [`conversations_query`] with `injected` as the expression of column
/// `is_injected` (`false` for a store from before that column).
fn conversations_query_with(from: &str, injected: &str) -> String {
    format!(
        "SELECT source, conversation_id,
            max(project) AS project,
            max(conversation_title) AS title,
            max(model) AS model,
            substr(arg_min(content, msg_index) FILTER (WHERE role = 'user' AND NOT {injected}),
                   1, {PREVIEW_CHARS}) AS preview,
            count(*)::INTEGER AS messages,
            min(created) AS first_at,
            max(created) AS last_at
         FROM {from}
         GROUP BY source, conversation_id"
    )
}

/// The per-conversation, day and project aggregate, over the messages of `from`.
fn days_query(from: &str) -> String {
    format!(
        "SELECT source, conversation_id, created::DATE AS day, project,
            count(*)::INTEGER AS messages,
            min(created) AS first_at,
            max(created) AS last_at,
            max(conversation_title) AS title,
            max(model) AS model
         FROM {from}
         GROUP BY source, conversation_id, day, project"
    )
}

/// The per-conversation and project aggregate, over the day rows of `from`, with the
/// conversation's preview from `conversation_summary` (made first): a project's list
/// then reads one table (the join at every call was ~1.3 ms of a project page's CPU at
/// 1M messages).
fn projects_of_conversations_query(from: &str) -> String {
    format!(
        "SELECT p.*, s.preview
         FROM (SELECT source, conversation_id, project,
                  sum(messages)::INTEGER AS messages,
                  min(first_at) AS first_at,
                  max(last_at) AS last_at,
                  max(title) AS title,
                  max(model) AS model
               FROM {from}
               GROUP BY source, conversation_id, project) p
         LEFT JOIN conversation_summary s
           ON s.source = p.source AND s.conversation_id = p.conversation_id"
    )
}

/// Messages and conversations per `period` (a `DATE` expression over
/// `conversation_days`' `day`) and source, over the day rows of `from`.
fn counts_query(period: &str, from: &str) -> String {
    format!(
        "SELECT {period} AS period, source,
            sum(messages)::INTEGER AS messages,
            count(DISTINCT conversation_id)::INTEGER AS conversations
         FROM {from}
         GROUP BY ALL"
    )
}

/// Messages and conversations per UTC month, project and source, over the day rows of
/// `from` (a message without a project has no row: no `project = $project` matches it):
/// a project's chart per month reads its few rows (grouping its day rows per
/// conversation and month took ~4 ms of CPU a call at 1M messages, this ~1.7 ms).
fn project_months_query(from: &str) -> String {
    format!(
        "SELECT {MONTH} AS period, project, source,
            sum(messages)::INTEGER AS messages,
            count(DISTINCT conversation_id)::INTEGER AS conversations
         FROM (SELECT * FROM {from}) d
         WHERE project IS NOT NULL
         GROUP BY ALL"
    )
}

/// Conversations, messages and first and last time per project (none, empty) and
/// source, over the day rows of `from` (a table, optionally with a `WHERE`).
fn projects_query(from: &str) -> String {
    format!(
        "SELECT project, source,
            count(DISTINCT conversation_id)::INTEGER AS conversations,
            sum(messages)::INTEGER AS messages,
            min(first_at) AS first_at,
            max(last_at) AS last_at
         FROM (SELECT * FROM {from}) d
         WHERE project IS NOT NULL AND project <> ''
         GROUP BY project, source"
    )
}

/// The month of `day` (its first day).
const MONTH: &str = "date_trunc('month', day)::DATE";

/// Every summary table with the query that computes it from the messages (for
/// `conversation_summary` and `conversation_days`) or from `conversation_days`; in the
/// order they are made.
fn definitions(injected: &str) -> [(&'static str, String); 7] {
    [
        (
            "conversation_summary",
            conversations_query_with("all_conversations", injected),
        ),
        ("conversation_days", days_query("all_conversations")),
        (
            "conversation_projects",
            projects_of_conversations_query("conversation_days"),
        ),
        ("daily_counts", counts_query("day", "conversation_days")),
        ("monthly_counts", counts_query(MONTH, "conversation_days")),
        (
            "project_monthly_counts",
            project_months_query("conversation_days"),
        ),
        ("project_counts", projects_query("conversation_days")),
    ]
}

/// Creates the summary tables when missing or older than this version ([`current`])
/// and then fills them from the stored messages (a store from before them, on its
/// first writable open).
///
/// # Errors
/// DuckDB's.
pub(super) fn init(conn: &Connection) -> duckdb::Result<()> {
    if !current(conn)? {
        make(conn)?;
    }
    // One conversation's row by id (a conversation page's header): an ART over the one
    // column finds it without reading every id (~1 ms a scan at 1M messages); built on
    // the first writable open of an older store.
    conn.execute_batch(
        "CREATE INDEX IF NOT EXISTS conversation_summary_conversation_id
             ON conversation_summary (conversation_id)",
    )
}

/// The columns of the two summary tables that keep a conversation's preview, as
/// created by [`make`]: the preview is stored uncompressed ([`PREVIEW_COMMENT`]).
/// The other tables take the columns their query gives (`CREATE TABLE … AS`).
fn columns_of(table: &str) -> Option<&'static str> {
    match table {
        "conversation_summary" => Some(
            "source VARCHAR, conversation_id VARCHAR, project VARCHAR, title VARCHAR,
             model VARCHAR, preview VARCHAR USING COMPRESSION uncompressed,
             messages INTEGER, first_at TIMESTAMP, last_at TIMESTAMP",
        ),
        "conversation_projects" => Some(
            "source VARCHAR, conversation_id VARCHAR, project VARCHAR, messages INTEGER,
             first_at TIMESTAMP, last_at TIMESTAMP, title VARCHAR, model VARCHAR,
             preview VARCHAR USING COMPRESSION uncompressed",
        ),
        _ => None,
    }
}

/// The comment on the `preview` column of `conversation_summary` and
/// `conversation_projects`, saying it is stored uncompressed: a store whose previews
/// lack it (FSST-compressed, from before) gets its summaries made again on its next
/// writable open. A list's scan decompressed every row's preview of each block it
/// read, though only its page's rows are shown: at 1M messages 3.2 of a project
/// list's 8 ms of CPU (docs/performance.md "A project page under 10 ms").
pub const PREVIEW_COMMENT: &str = "stored uncompressed: a list reads it without decompressing";

/// Makes every summary table again from the stored messages, in one transaction.
fn make(conn: &Connection) -> duckdb::Result<()> {
    // One transaction: a store never has one table without its rows.
    // Rows in order of last activity: the newest conversations sit together, so a
    // scan for them skips most of the table.
    let mut sql = String::from("BEGIN TRANSACTION;");
    for (table, query) in definitions("is_injected") {
        let order = if !table.ends_with("ly_counts") {
            "last_at"
        } else {
            "period"
        };
        sql.push_str(&format!("DROP TABLE IF EXISTS {table};"));
        match columns_of(table) {
            Some(columns) => sql.push_str(&format!(
                "CREATE TABLE {table} ({columns});
                 COMMENT ON COLUMN {table}.preview IS '{PREVIEW_COMMENT}';
                 INSERT INTO {table} SELECT * FROM ({query}) ORDER BY {order};"
            )),
            None => sql.push_str(&format!(
                "CREATE TABLE {table} AS SELECT * FROM ({query}) ORDER BY {order};"
            )),
        }
    }
    sql.push_str("COMMIT;");
    conn.execute_batch(&sql)
}

/// True when the summary tables are as this version makes them: all present, and the
/// previews stored uncompressed ([`PREVIEW_COMMENT`]).
///
/// # Errors
/// DuckDB's.
fn current(conn: &Connection) -> duckdb::Result<bool> {
    if !present(conn)? {
        return Ok(false);
    }
    let n: i64 = conn.query_row(
        "SELECT count(*) FROM duckdb_columns()
         WHERE database_name = current_database() AND schema_name = 'main'
           AND table_name IN ('conversation_summary', 'conversation_projects')
           AND column_name = 'preview' AND comment = ?",
        [PREVIEW_COMMENT],
        |r| r.get(0),
    )?;
    Ok(n == 2)
}

/// True when the connection's default database holds every summary table.
///
/// # Errors
/// DuckDB's.
pub(super) fn present(conn: &Connection) -> duckdb::Result<bool> {
    let n: i64 = conn.query_row(
        "SELECT count(*) FROM duckdb_tables()
         WHERE database_name = current_database() AND schema_name = 'main'
           AND table_name IN ('conversation_summary', 'conversation_days',
                              'conversation_projects', 'daily_counts', 'monthly_counts',
                              'project_monthly_counts', 'project_counts')",
        [],
        |r| r.get(0),
    )?;
    // A store from before one of them gets them all made again on its next writable
    // open (`project_monthly_counts` came last, with `conversation_projects.preview`,
    // so a store without it has the older `conversation_projects` too).
    Ok(n == 7)
}

/// For a store opened read-only that has no summary tables yet (written by an older
/// version and not opened writable since): temporary views of the same aggregates on
/// `conn`, so the skills that read the summaries still answer (temporary objects are
/// found before the attached database's).
///
/// # Errors
/// DuckDB's.
pub(super) fn fallback_views(conn: &Connection) -> duckdb::Result<()> {
    // Columns of `all_conversations`: none when the file has no table (the skills'
    // queries then fail naming it, as before); `is_injected` missing in older stores.
    let (columns, injected): (i64, bool) = conn.query_row(
        "SELECT count(*), bool_or(column_name = 'is_injected') FROM duckdb_columns()
         WHERE database_name = current_database() AND schema_name = 'main'
           AND table_name = 'all_conversations'",
        [],
        |r| Ok((r.get(0)?, r.get::<_, Option<bool>>(1)?.unwrap_or(false))),
    )?;
    if columns == 0 {
        return Ok(());
    }
    let mut sql = String::new();
    for (table, query) in definitions(if injected { "is_injected" } else { "false" }) {
        sql.push_str(&format!("CREATE OR REPLACE TEMP VIEW {table} AS {query};"));
    }
    conn.execute_batch(&sql)
}

impl ConversationStore {
    /// Recomputes the summary rows of the conversations `pairs` (`source`,
    /// `conversation_id`) from `all_conversations`, inside the caller's transaction: a
    /// conversation without messages left loses its rows. Every writer calls it before
    /// committing, with every conversation whose messages it added, changed or deleted;
    /// it records them in the change log too ([`super::changes`]).
    ///
    /// # Errors
    /// [`StoreError::DuckDb`]; the caller's transaction is then to be rolled back.
    pub(super) fn refresh_summaries<'p>(
        &self,
        tx: &Connection,
        pairs: impl Iterator<Item = (&'p str, &'p str)>,
    ) -> Result<(), StoreError> {
        tx.execute_batch(
            "CREATE OR REPLACE TEMP TABLE summary_touched (source VARCHAR, conversation_id VARCHAR)",
        )
        .map_err(|e| self.error(e))?;
        {
            let mut app = tx.appender("summary_touched").map_err(|e| self.error(e))?;
            let mut seen = std::collections::HashSet::new();
            for (source, id) in pairs {
                if seen.insert((source, id)) {
                    app.append_row(duckdb::params![source, id])
                        .map_err(|e| self.error(e))?;
                }
            }
            app.flush().map_err(|e| self.error(e))?;
        }
        // The same conversations in the change log, in the same transaction.
        super::changes::record(tx, "summary_touched").map_err(|e| self.error(e))?;
        let touched = "(SELECT * FROM all_conversations
                        WHERE (source, conversation_id) IN
                          (SELECT source, conversation_id FROM summary_touched)) a";
        // The days, projects and sources the touched conversations had, and (below)
        // have: their counts are recomputed from the day rows.
        tx.execute_batch(
            "CREATE OR REPLACE TEMP TABLE periods_touched AS
               SELECT DISTINCT d.day, d.project, d.source FROM conversation_days d
               SEMI JOIN summary_touched t
                 ON d.source = t.source AND d.conversation_id = t.conversation_id",
        )
        .map_err(|e| self.error(e))?;
        tx.execute_batch(&format!(
            "DELETE FROM conversation_summary s USING summary_touched t
               WHERE s.source = t.source AND s.conversation_id = t.conversation_id;
             DELETE FROM conversation_days s USING summary_touched t
               WHERE s.source = t.source AND s.conversation_id = t.conversation_id;
             INSERT INTO conversation_summary SELECT * FROM ({}) ORDER BY last_at;
             INSERT INTO conversation_days SELECT * FROM ({}) ORDER BY last_at;
             DELETE FROM conversation_projects s USING summary_touched t
               WHERE s.source = t.source AND s.conversation_id = t.conversation_id;
             INSERT INTO conversation_projects {};
             INSERT INTO periods_touched
               SELECT DISTINCT d.day, d.project, d.source FROM conversation_days d
               SEMI JOIN summary_touched t
                 ON d.source = t.source AND d.conversation_id = t.conversation_id;
             DELETE FROM daily_counts c USING (SELECT DISTINCT day, source FROM periods_touched) p
               WHERE c.period = p.day AND c.source = p.source;
             INSERT INTO daily_counts {};
             DELETE FROM monthly_counts c
               USING (SELECT DISTINCT {MONTH} AS month, source FROM periods_touched) p
               WHERE c.period = p.month AND c.source = p.source;
             INSERT INTO monthly_counts {};
             DELETE FROM project_monthly_counts c
               USING (SELECT DISTINCT {MONTH} AS month, project, source FROM periods_touched) p
               WHERE c.period = p.month AND c.project = p.project AND c.source = p.source;
             INSERT INTO project_monthly_counts {};
             DELETE FROM project_counts c
               USING (SELECT DISTINCT project, source FROM periods_touched) p
               WHERE c.project = p.project AND c.source = p.source;
             INSERT INTO project_counts {};
             DROP TABLE summary_touched;
             DROP TABLE periods_touched;",
            conversations_query(touched),
            days_query(touched),
            projects_of_conversations_query(
                "(SELECT * FROM conversation_days d
                  WHERE (source, conversation_id) IN
                    (SELECT source, conversation_id FROM summary_touched)) d"
            ),
            counts_query(
                "day",
                "conversation_days WHERE (day, source) IN (SELECT day, source FROM periods_touched)"
            ),
            counts_query(
                MONTH,
                &format!(
                    "conversation_days WHERE ({MONTH}, source) IN
                       (SELECT {MONTH}, source FROM periods_touched)"
                )
            ),
            project_months_query(&format!(
                "conversation_days WHERE ({MONTH}, project, source) IN
                   (SELECT {MONTH}, project, source FROM periods_touched)"
            )),
            projects_query(
                "conversation_days WHERE (project, source) IN
                   (SELECT project, source FROM periods_touched)"
            ),
        ))
        .map_err(|e| self.error(e))
    }
}

/// The summary tables' rows that differ from the aggregates recomputed over
/// `all_conversations` (both directions, `EXCEPT ALL`): 0 when they are exact. For the
/// differential tests and `skills verify`.
///
/// # Errors
/// [`StoreError::DuckDb`].
pub fn mismatches(store: &ConversationStore) -> Result<u64, StoreError> {
    let conn = store.connection()?;
    let mut total = 0u64;
    // Each table against its definition over the tables it derives from, and
    // `conversation_days` derives from the messages: so all are checked to the messages.
    for (table, query) in definitions("is_injected") {
        let n: i64 = conn
            .query_row(
                &format!(
                    "SELECT (SELECT count(*) FROM (SELECT * FROM {table} EXCEPT ALL ({query})))
                          + (SELECT count(*) FROM (({query}) EXCEPT ALL SELECT * FROM {table}))"
                ),
                [],
                |r| r.get(0),
            )
            .map_err(|e| store.error(e))?;
        total += u64::try_from(n).unwrap_or(0);
    }
    Ok(total)
}
