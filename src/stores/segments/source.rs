//! Reading the rows a segment is built from out of `all_conversations`, shared by the
//! segment kinds' builders: text columns borrowed from a DuckDB row, and the
//! condition that selects the rows of the conversations a session changed.

use super::Touched;

/// Column `i` of `row` as text borrowed from the row (no copy).
///
/// # Errors
/// [`duckdb::Error::InvalidColumnType`] when the column is not text;
/// [`duckdb::Error::FromSqlConversionFailure`] when it is not UTF-8.
pub(crate) fn str_ref<'r>(row: &'r duckdb::Row<'_>, i: usize) -> Result<&'r str, duckdb::Error> {
    match row.get_ref(i)? {
        duckdb::types::ValueRef::Text(b) => std::str::from_utf8(b).map_err(|e| {
            duckdb::Error::FromSqlConversionFailure(i, duckdb::types::Type::Text, Box::new(e))
        }),
        other => Err(duckdb::Error::InvalidColumnType(
            i,
            format!("column {i}"),
            other.data_type(),
        )),
    }
}

/// A `WHERE` condition (with a leading space) on `all_conversations` that keeps
/// exactly the rows of the `touched` conversations: they are loaded into the temporary
/// table `table` (replaced if it exists), and the condition is
/// ` rowid BETWEEN lo AND hi AND (source, conversation_id) IN (SELECT … FROM table)`,
/// or ` FALSE` when no row matches.
///
/// Why the `rowid` range: DuckDB runs the `IN (SELECT …)` as a hash join that
/// decompresses every projected column of the whole table (~0.6 s for the `content`
/// of 1M rows, for an append of 1,000). Finding the rows' range first reads only the
/// two key columns; the range then lets the scan skip every row group outside it — an
/// ingest's new and rewritten conversations sit at the table's end.
pub(crate) fn touched_rows(
    conn: &duckdb::Connection,
    table: &str,
    touched: &Touched,
) -> Result<String, duckdb::Error> {
    conn.execute_batch(&format!(
        "CREATE OR REPLACE TEMP TABLE {table} (source VARCHAR, conversation_id VARCHAR)"
    ))?;
    {
        let mut app = conn.appender(table)?;
        for (s, c) in touched {
            app.append_row(duckdb::params![s, c])?;
        }
        app.flush()?;
    }
    let keys =
        format!("(source, conversation_id) IN (SELECT source, conversation_id FROM {table})");
    let (lo, hi): (Option<i64>, Option<i64>) = conn.query_row(
        &format!("SELECT min(rowid), max(rowid) FROM all_conversations WHERE {keys}"),
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    Ok(match (lo, hi) {
        (Some(lo), Some(hi)) => format!(" rowid BETWEEN {lo} AND {hi} AND {keys}"),
        _ => " FALSE".to_owned(),
    })
}
