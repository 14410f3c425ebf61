//! Read-only opens without a new DuckDB instance: the store file is `ATTACH`ed
//! (`READ_ONLY`) to an in-memory DuckDB instance kept for that path, and `DETACH`ed
//! when the [`ConversationStore`](super::ConversationStore) is dropped.
//!
//! Starting a DuckDB instance costs ~8 ms (its catalog of built-in functions is made
//! each time), more than a whole browse page may take (docs/performance.md "Browse
//! pages at 1M messages"); attaching a file to a running instance ~1 ms. The file's
//! lock is still held only while a store handle lives (one engine call), so an
//! outside `skills ingest` gets in between calls as before.
//!
//! The kept instance is sandboxed as [`crate::stores::sandbox::duckdb_config`] is,
//! except that it may reach exactly this store's file and its write-ahead log files
//! (`allowed_paths`, set before external access is turned off and the configuration
//! locked): skill SQL run on it can read no other file. `allowed_paths` lets file
//! readers (`read_blob`) open the store's file too, so skill SQL's table functions are
//! checked on an allowlist first ([`crate::stores::sandbox::check_table_functions`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use duckdb::Connection;

/// Kept instances at most (one per store path; tests open many stores).
const KEPT: usize = 4;

/// The kept instances, most recently used last.
static INSTANCES: Mutex<Vec<(PathBuf, Connection)>> = Mutex::new(Vec::new());

/// Numbers the attachments, so that each handle's alias is its own.
static NEXT: AtomicU64 = AtomicU64::new(0);

/// One attachment of a store file: its alias, detached on drop.
pub struct Attached {
    alias: String,
    /// A connection of the instance, to detach with (behind a lock: a connection is
    /// not `Sync`, and stores are shared between threads).
    conn: Mutex<Connection>,
    /// The file has no summary tables (written before them): each connection gets
    /// views of them ([`super::summary::fallback_views`]).
    fallback: bool,
}

impl Attached {
    /// Makes this attachment the default database of `conn` (a clone of the
    /// attached connection: clones start on the instance's own database).
    ///
    /// # Errors
    /// DuckDB's.
    pub(super) fn use_on(&self, conn: &Connection) -> duckdb::Result<()> {
        conn.execute_batch(&format!("USE {}", self.alias))?;
        if self.fallback {
            super::summary::fallback_views(conn)?;
        }
        Ok(())
    }
}

impl Drop for Attached {
    /// Lets go of the attachment, and so of the file's lock once no query still runs
    /// on it. A failure leaves it attached until the instance is dropped.
    fn drop(&mut self) {
        let conn = self
            .conn
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let _ = conn.execute_batch(&format!("DETACH DATABASE IF EXISTS {}", self.alias));
    }
}

/// A connection of the kept instance of `path` with the file attached read-only and
/// made its default database (`USE`), and the attachment.
///
/// # Errors
/// DuckDB's, among them the file lock held by another process's writer (the caller
/// waits and tries again).
pub(super) fn attach(path: &Path) -> duckdb::Result<(Connection, Attached)> {
    let base = base(path)?;
    let conn = base.try_clone()?;
    let alias = format!("store_{}", NEXT.fetch_add(1, Ordering::Relaxed));
    conn.execute_batch(&format!(
        "ATTACH {} AS {alias} (READ_ONLY); USE {alias};",
        quote(path)
    ))?;
    let fallback = !super::summary::present(&conn)?;
    Ok((
        conn,
        Attached {
            alias,
            conn: Mutex::new(base),
            fallback,
        },
    ))
}

/// A connection of the kept instance for `path`, started when there is none.
fn base(path: &Path) -> duckdb::Result<Connection> {
    let mut kept = INSTANCES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(at) = kept.iter().position(|(p, _)| p == path) {
        let entry = kept.remove(at);
        let conn = entry.1.try_clone();
        kept.push(entry);
        return conn;
    }
    let conn = start(path)?;
    let clone = conn.try_clone()?;
    if kept.len() >= KEPT {
        kept.remove(0);
    }
    kept.push((path.to_path_buf(), conn));
    Ok(clone)
}

/// The files DuckDB keeps beside a database file: its write-ahead log, and the two
/// it moves the log to while a checkpoint or a recovery runs (left behind when a
/// writer is killed then, and read when the file is next attached).
const WAL_SUFFIXES: [&str; 3] = [".wal", ".wal.checkpoint", ".wal.recovery"];

/// A new in-memory instance that may read only `path` (and its write-ahead log files).
fn start(path: &Path) -> duckdb::Result<Connection> {
    let config = duckdb::Config::default()
        .enable_autoload_extension(false)?
        .with("allow_community_extensions", "false")?;
    let conn = Connection::open_in_memory_with_flags(config)?;
    let mut allowed = vec![quote(path)];
    for suffix in WAL_SUFFIXES {
        allowed.push(quote(&PathBuf::from(format!("{}{suffix}", path.display()))));
    }
    // `allowed_paths` can only be set on a running instance, and only while external
    // access is still on: so in this order, then the configuration is locked.
    conn.execute_batch(&format!(
        "SET allowed_paths = [{}];
         SET enable_external_access = false;
         SET lock_configuration = true;",
        allowed.join(", ")
    ))?;
    Ok(conn)
}

/// `path` as a SQL string literal.
fn quote(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', "''"))
}
