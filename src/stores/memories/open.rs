//! Opening the memories file: the writable store (creating file and schema), the
//! read-only store and the bare read-only connection share one hardened opener, and a
//! hot journal left by an interrupted write is rolled back before reading.

use std::path::Path;
use std::sync::Mutex;

use rusqlite::{Connection, OpenFlags};

use super::schema::SCHEMA;
use super::{fts, MemoryStore, StoreError};

impl MemoryStore {
    /// Opens (creating the file, its folder and the schema when missing) a writable store.
    ///
    /// # Errors
    /// [`StoreError::Io`] when the folder cannot be created, [`StoreError::Sqlite`] when
    /// the file is not a SQLite database or the schema cannot be created.
    pub fn open_rw(path: &Path) -> Result<Self, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs_err::create_dir_all(dir)?;
        }
        let conn = Connection::open(path).map_err(|e| sqlite_error(path, e))?;
        let store = Self {
            path: path.to_path_buf(),
            conn: Mutex::new(conn),
            read_only: false,
            index: Mutex::new(None),
        };
        store.init()?;
        Ok(store)
    }

    /// Opens an existing store read-only: SQLite's read-only open flag plus
    /// `PRAGMA query_only = 1`. Nothing this handle does can change the file.
    ///
    /// # Errors
    /// [`StoreError::Missing`] when the file does not exist (nothing imported yet),
    /// [`StoreError::Sqlite`] when it is not a memories store.
    pub fn open_ro(path: &Path) -> Result<Self, StoreError> {
        // Temp schema only (never the file), and before `query_only`, which refuses it.
        let conn = read_only_connection(path, Some(&fts::CREATE_INSTANCE_TABLE))?;
        conn.query_row(
            "SELECT count(*) FROM memories_fts WHERE rowid = 0",
            [],
            |_| Ok(()),
        )
        .map_err(|e| sqlite_error(path, e))?;
        Ok(Self {
            path: path.to_path_buf(),
            conn: Mutex::new(conn),
            read_only: true,
            index: Mutex::new(None),
        })
    }

    /// A writable store in memory (tests, benchmarks; feature `bench`).
    ///
    /// # Errors
    /// [`StoreError::Sqlite`] if SQLite cannot create the schema.
    #[cfg(any(test, feature = "bench"))]
    pub fn open_in_memory() -> Result<Self, StoreError> {
        let path = std::path::PathBuf::from(":memory:");
        let conn = Connection::open_in_memory().map_err(|e| sqlite_error(&path, e))?;
        let store = Self {
            path,
            conn: Mutex::new(conn),
            read_only: false,
            index: Mutex::new(None),
        };
        store.init()?;
        Ok(store)
    }

    fn init(&self) -> Result<(), StoreError> {
        let mut conn = self.lock();
        conn.execute_batch(SCHEMA).map_err(|e| self.error(e))?;
        fill_stemmed(&mut conn).map_err(|e| self.error(e))?;
        super::secrets::init(&mut conn).map_err(|e| self.error(e))?;
        conn.execute_batch(&fts::CREATE_INSTANCE_TABLE)
            .map_err(|e| self.error(e))
    }
}

/// Fills `memories_stem` from `memories_fts` when their row counts differ: a store
/// written before the stemmed table existed gets it on its first writable open (the
/// schema has just created it empty), and so does one a writer from before it wrote
/// to since (rows in `memories` and `memories_fts` only). One transaction: readers
/// see it whole or not at all.
///
/// The counts are FTS5's own (each table's averages record: two point reads on every
/// writable open, where `count(*)` of `memories` and `memories_stem_docsize` walked
/// both, ~3 ms at 100k memories with the file cached). `memories_fts` stands for
/// `memories`: every writer, since the first, changes both in one transaction, and it
/// is what the fill copies. An unreadable averages record falls back to counting.
fn fill_stemmed(conn: &mut Connection) -> Result<(), rusqlite::Error> {
    if stemmed_in_step(conn)? {
        return Ok(());
    }
    // The write lock first, as every write of the store. Checked again under the lock:
    // another writer opening the file at once may have filled it meanwhile.
    let tx = super::write::write_transaction(conn)?;
    if !stemmed_in_step(&tx)? {
        tx.execute_batch(
            "DELETE FROM memories_stem; \
             INSERT INTO memories_stem(rowid, title, tags, body) \
             SELECT rowid, title, tags, body FROM memories_fts;",
        )?;
    }
    tx.commit()
}

/// Whether the stemmed index holds as many rows as the plain one (see [`fill_stemmed`]).
fn stemmed_in_step(conn: &Connection) -> Result<bool, rusqlite::Error> {
    let count = |table: &str| -> Result<i64, rusqlite::Error> {
        conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
    };
    Ok(
        match (
            fts::row_count(conn, fts::Table::Plain)?,
            fts::row_count(conn, fts::Table::Stemmed)?,
        ) {
            (Some(plain), Some(stemmed)) => plain == stemmed,
            _ => count("memories")? == count("memories_stem_docsize")?,
        },
    )
}

/// A read-only connection to the memories file at `path`, for SQL the store does not
/// write itself: the `sql` engine's queries and the conformance checks' lookups (both
/// may come from an untrusted skill folder). SQLite's read-only open flag plus
/// `PRAGMA query_only = 1`: nothing done through it can change the file.
///
/// # Errors
/// [`StoreError::Missing`] when the file does not exist (nothing imported yet),
/// [`StoreError::Sqlite`] when SQLite cannot open it.
pub fn query_connection(path: &Path) -> Result<Connection, StoreError> {
    read_only_connection(path, None)
}

/// Rolls back a hot journal that an interrupted write left beside the memories file
/// (`memories.sqlite-journal` after a `kill -9` or a full disk during an import), so
/// read-only connections can read again: SQLite refuses to read a database with a hot
/// journal through a read-only handle ("attempt to write a readonly database"). A
/// writable connection that reads one page does SQLite's own recovery (the journal is
/// played back only when no live writer holds it; a running import is waited for up
/// to 5 s, not disturbed). Nothing happens when there is no journal, so a healthy
/// store costs one `stat`.
///
/// # Errors
/// [`StoreError::Sqlite`] when the journal cannot be rolled back (e.g. the file is
/// not writable for this user), naming the file.
pub fn recover_hot_journal(path: &Path) -> Result<(), StoreError> {
    let mut journal = path.as_os_str().to_owned();
    journal.push("-journal");
    let journal = Path::new(&journal);
    match std::fs::metadata(journal) {
        Ok(meta) if meta.len() > 0 && path.exists() => {}
        _ => return Ok(()),
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(|e| sqlite_error(path, e))?;
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(|e| sqlite_error(path, e))?;
    conn.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))
        .map_err(|e| {
            sqlite_error(
                path,
                rusqlite::Error::SqliteFailure(
                    rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN),
                    Some(format!(
                        "`{}` is a hot journal left by an interrupted write and could not be rolled back: {e}",
                        journal.display()
                    )),
                ),
            )
        })?;
    Ok(())
}

/// The one read-only opener of the memories file ([`query_connection`] and
/// [`MemoryStore::open_ro`] both come here, so hardening it covers every reader):
/// opens `path` with the read-only flag, runs `temp_setup` (statements that may only
/// create temp objects), then sets `PRAGMA query_only`.
pub(super) fn read_only_connection(
    path: &Path,
    temp_setup: Option<&str>,
) -> Result<Connection, StoreError> {
    if !path.exists() {
        return Err(StoreError::Missing {
            store: crate::stores::Store::Memories,
            path: path.to_path_buf(),
        });
    }
    recover_hot_journal(path)?;
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(|e| sqlite_error(path, e))?;
    // A writer committing holds the file for milliseconds: wait rather than fail.
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(|e| sqlite_error(path, e))?;
    if let Some(setup) = temp_setup {
        conn.execute_batch(setup)
            .map_err(|e| sqlite_error(path, e))?;
    }
    conn.pragma_update(None, "query_only", 1)
        .map_err(|e| sqlite_error(path, e))?;
    Ok(conn)
}

pub(super) fn sqlite_error(path: &Path, source: rusqlite::Error) -> StoreError {
    StoreError::Sqlite {
        path: path.to_path_buf(),
        source,
    }
}
