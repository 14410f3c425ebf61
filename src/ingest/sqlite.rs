//! Opening the SQLite sources importers read (Cursor `state.vscdb`, `opencode.db`)
//! read-only, and reading their values as text.

use std::path::Path;

use super::IngestError;

/// Opens a SQLite source read-only (never written, never created). When the plain
/// read-only open cannot read it (a write-ahead-logged database in a folder we cannot
/// write, whose `-shm` file is missing), it is opened `immutable`, which reads the main
/// file alone.
///
/// # Errors
/// [`IngestError::Sqlite`] when neither open can read the schema.
pub(crate) fn open_sqlite_read_only(path: &Path) -> Result<rusqlite::Connection, IngestError> {
    use rusqlite::{Connection, OpenFlags};
    let probe = |conn: Connection| {
        conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
            r.get::<_, i64>(0)
        })
        .map(|_| conn)
    };
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let first = Connection::open_with_flags(path, flags).and_then(probe);
    first.or_else(|first_error| {
        let escaped: String = path
            .to_string_lossy()
            .chars()
            .map(|c| match c {
                '%' => "%25".to_owned(),
                '?' => "%3f".to_owned(),
                '#' => "%23".to_owned(),
                c => c.to_string(),
            })
            .collect();
        Connection::open_with_flags(
            format!("file:{escaped}?immutable=1"),
            flags | OpenFlags::SQLITE_OPEN_URI,
        )
        .and_then(probe)
        .map_err(|_| IngestError::Sqlite {
            path: path.to_path_buf(),
            source: first_error,
        })
    })
}

/// Names of the tables of a SQLite database.
pub(crate) fn sqlite_tables(conn: &rusqlite::Connection) -> Result<Vec<String>, rusqlite::Error> {
    let mut stmt = conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table'")?;
    let names = stmt.query_map([], |r| r.get::<_, String>(0))?;
    names.collect()
}

/// A SQLite value as text (text and blobs as UTF-8, lossily; numbers printed).
pub(crate) fn sqlite_text(value: rusqlite::types::ValueRef<'_>) -> String {
    use rusqlite::types::ValueRef;
    match value {
        ValueRef::Text(b) | ValueRef::Blob(b) => String::from_utf8_lossy(b).into_owned(),
        ValueRef::Integer(i) => i.to_string(),
        ValueRef::Real(f) => f.to_string(),
        ValueRef::Null => String::new(),
    }
}
