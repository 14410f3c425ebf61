//! Read-only opens without a new DuckDB instance: the store file is `ATTACH`ed
//! (`READ_ONLY`) to an in-memory DuckDB instance kept for that path, and kept attached
//! between calls ("warm") until a writer wants the file.
//!
//! Starting a DuckDB instance costs ~8 ms (its catalog of built-in functions is made
//! each time), more than a whole browse page may take (docs/performance.md "Browse
//! pages at 1M messages"); attaching a file to a running instance ~1 ms, but a fresh
//! attachment reads and checksums every block a query needs again. A warm attachment
//! keeps DuckDB's buffer pool: at 1M messages the browse pages' skill calls took
//! 3–5× less ("Kept instance").
//!
//! A warm attachment holds DuckDB's shared lock on the file, so no other process can
//! write it meanwhile, and what it shows stays current. Every writer of the store
//! takes the search index's lock (`conversations.index/LOCK`) before it opens the
//! database; a watcher thread looks at that lock every [`WATCH_EVERY`] and detaches an
//! idle warm attachment as soon as a writer holds it (or after [`IDLE`] without a
//! call), so `skills ingest` — and serve's background import — waits at most a few
//! tens of milliseconds for the file, as DuckDB's lock is retried. While a writer
//! holds the lock, each call attaches and detaches on its own, as before. A writer in
//! this process (which DuckDB's process-wide lock does not keep out) bumps
//! [`super::WRITES`]; an attachment older than the last bump is not reused.
//!
//! A warm attachment also keeps up to [`POOLED`] idle connections for the `sql`
//! engine's queries ([`super::Pooled`]), each with the statements it prepared: a call
//! then skips making a connection, its `USE` and the parse and first bind of its
//! query (DuckDB still binds and plans the statement again with the call's values).
//! They are closed before the attachment is detached, whatever detaches it.
//!
//! The kept instance is sandboxed as [`crate::stores::sandbox::duckdb_config`] is,
//! except that it may reach exactly this store's file and its write-ahead log files
//! (`allowed_paths`, set before external access is turned off and the configuration
//! locked): skill SQL run on it can read no other file. `allowed_paths` lets file
//! readers (`read_blob`) open the store's file too, so skill SQL's table functions are
//! checked on an allowlist first ([`crate::stores::sandbox::check_table_functions`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use duckdb::Connection;

use super::index::writer_holds_lock;

/// Kept instances at most (one per store path; tests open many stores).
const KEPT: usize = 4;

/// How often the watcher looks for a writer wanting a warm attachment's file.
pub const WATCH_EVERY: Duration = Duration::from_millis(20);

/// A warm attachment unused this long is detached (the file's lock and the cached
/// blocks let go).
pub const IDLE: Duration = Duration::from_secs(10);

/// Idle connections kept per warm attachment for the next calls' queries
/// ([`lease`], [`give_back`]): each already made the attachment its default database,
/// and keeps the statements it prepared (a call that finds its query's text among them
/// skips making a connection, the `USE`, and the parse and first bind of the prepare;
/// docs/performance.md "A project page's connections kept"). As many as a page runs
/// calls at once.
pub const POOLED: usize = 4;

/// One kept instance: its path, a connection of it, and its warm attachment.
struct Kept {
    path: PathBuf,
    base: Connection,
    warm: Option<Warm>,
}

/// The attachment kept between calls.
struct Warm {
    alias: String,
    /// Calls using it now.
    users: usize,
    /// When the last call using it ended.
    idle_since: Instant,
    /// [`super::WRITES`] when it was attached.
    writes: u64,
    fallback: bool,
    /// Idle connections of this attachment, at most [`POOLED`]: dropped before it is
    /// detached (their prepared statements refer to it).
    pool: Vec<Connection>,
}

impl Warm {
    /// Lets go of the attachment: its pooled connections first, then the file.
    fn detach(self, base: &Connection) {
        let Self { alias, pool, .. } = self;
        drop(pool);
        detach(base, &alias);
    }
}

/// The kept instances, most recently used last.
static INSTANCES: Mutex<Vec<Kept>> = Mutex::new(Vec::new());

/// Numbers the attachments, so that each handle's alias is its own.
static NEXT: AtomicU64 = AtomicU64::new(0);

/// Whether the watcher thread runs (changed only under [`INSTANCES`]' lock).
static WATCHING: AtomicBool = AtomicBool::new(false);

/// One call's use of an attachment of a store file: detached on drop unless it is
/// the warm one.
pub struct Attached {
    path: PathBuf,
    alias: String,
    /// A connection of the instance, to detach with (behind a lock: a connection is
    /// not `Sync`, and stores are shared between threads); `None` for the warm
    /// attachment, detached with the kept instance's own connection.
    conn: Option<Mutex<Connection>>,
    /// The file has no summary tables (written before them): each connection gets
    /// views of them ([`super::summary::fallback_views`]).
    fallback: bool,
    /// This is the instance's warm attachment (kept after the call).
    warm: bool,
}

impl Attached {
    /// The alias of this attachment when it is the instance's warm one (kept after the
    /// call, with its pool of connections).
    pub(super) fn warm_alias(&self) -> Option<&str> {
        self.warm.then_some(self.alias.as_str())
    }

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
    /// Ends the call's use: the warm attachment stays (detached at once when a writer
    /// waits), any other is let go of, and so the file's lock once no query still runs
    /// on it. A failure leaves it attached until the instance is dropped.
    fn drop(&mut self) {
        if self.warm {
            let mut kept = lock_instances();
            let entry = kept.iter_mut().find(|k| k.path == self.path);
            if let Some(k) = entry {
                if let Some(w) = k.warm.as_mut().filter(|w| w.alias == self.alias) {
                    w.users = w.users.saturating_sub(1);
                    w.idle_since = Instant::now();
                    if w.users > 0 || !writer_holds_lock(&self.path) {
                        return;
                    }
                    k.warm = None;
                }
                // No longer (or not) the warm one: let go of it now.
                detach(&k.base, &self.alias);
            }
            return;
        }
        if let Some(conn) = self.conn.as_mut() {
            let conn = conn
                .get_mut()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            detach(conn, &self.alias);
        }
    }
}

fn lock_instances() -> std::sync::MutexGuard<'static, Vec<Kept>> {
    INSTANCES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn detach(conn: &Connection, alias: &str) {
    let _ = conn.execute_batch(&format!("DETACH DATABASE IF EXISTS {alias}"));
}

/// A connection of the kept instance of `path` with the file attached read-only and
/// made its default database (`USE`), and the call's use of the attachment: the warm
/// one when it can be reused, else a new one (made the warm one when no writer holds
/// the store's writer lock).
///
/// # Errors
/// DuckDB's, among them the file lock held by another process's writer (the caller
/// waits and tries again).
pub(super) fn attach(path: &Path) -> duckdb::Result<(Connection, Attached)> {
    let writes = super::WRITES.load(Ordering::SeqCst);
    let writer = writer_holds_lock(path);
    let mut kept = lock_instances();
    let k = kept_for(&mut kept, path)?;
    if let Some(w) = k.warm.as_mut() {
        if !writer && w.writes == writes {
            // A connection to clone from: the store's connections are clones made
            // default to the attachment with `USE` ([`Attached::use_on`]), so this
            // one needs no `USE` of its own (a statement a call: ~3 % of a project
            // page's CPU at 1M messages), and the kept instance's own connection
            // detaches it.
            let conn = k.base.try_clone()?;
            // Counted only once nothing can fail: a use never dropped would keep it
            // attached for good.
            w.users += 1;
            return Ok((
                conn,
                Attached {
                    path: path.to_path_buf(),
                    alias: w.alias.clone(),
                    conn: None,
                    fallback: w.fallback,
                    warm: true,
                },
            ));
        }
        if w.users == 0 {
            if let Some(w) = k.warm.take() {
                w.detach(&k.base);
            }
        }
    }
    let base = k.base.try_clone()?;
    let conn = base.try_clone()?;
    let alias = format!("store_{}", NEXT.fetch_add(1, Ordering::Relaxed));
    conn.execute_batch(&format!(
        "ATTACH {} AS {alias} (READ_ONLY); USE {alias};",
        quote(path)
    ))?;
    let fallback = match super::summary::present(&conn) {
        Ok(present) => !present,
        Err(e) => {
            detach(&base, &alias);
            return Err(e);
        }
    };
    let warm = !writer && k.warm.is_none() && watcher_runs();
    if warm {
        k.warm = Some(Warm {
            alias: alias.clone(),
            users: 1,
            idle_since: Instant::now(),
            writes,
            fallback,
            pool: Vec::new(),
        });
    }
    Ok((
        conn,
        Attached {
            path: path.to_path_buf(),
            alias,
            conn: (!warm).then(|| Mutex::new(base)),
            fallback,
            warm,
        },
    ))
}

/// An idle pooled connection of warm attachment `alias` of `path` (its default
/// database already the attachment), when there is one.
pub(super) fn lease(path: &Path, alias: &str) -> Option<Connection> {
    let mut kept = lock_instances();
    kept.iter_mut()
        .find(|k| k.path == path)?
        .warm
        .as_mut()
        .filter(|w| w.alias == alias)?
        .pool
        .pop()
}

/// Keeps `conn` (a connection made the default of warm attachment `alias` of `path`,
/// its last query ended normally) for the next call, while that attachment is still
/// the warm one and fewer than [`POOLED`] are kept; else it is closed.
pub(super) fn give_back(path: &Path, alias: &str, conn: Connection) {
    let mut kept = lock_instances();
    let warm = kept
        .iter_mut()
        .find(|k| k.path == path)
        .and_then(|k| k.warm.as_mut())
        .filter(|w| w.alias == alias && w.pool.len() < POOLED);
    if let Some(w) = warm {
        w.pool.push(conn);
        return;
    }
    drop(kept);
    drop(conn);
}

/// Starts the watcher unless it runs (call under [`INSTANCES`]' lock, so it cannot be
/// ending meanwhile); false when it cannot be started — then nothing may stay attached
/// between calls.
fn watcher_runs() -> bool {
    if WATCHING.swap(true, Ordering::SeqCst) {
        return true;
    }
    let spawned = std::thread::Builder::new()
        .name("duckdb-warm".into())
        .spawn(watch);
    if spawned.is_err() {
        WATCHING.store(false, Ordering::SeqCst);
        return false;
    }
    true
}

/// The watcher: detaches idle warm attachments whose store a writer wants, or unused
/// for [`IDLE`]; ends when none is left.
fn watch() {
    loop {
        std::thread::sleep(WATCH_EVERY);
        let mut kept = lock_instances();
        let mut left = false;
        for k in kept.iter_mut() {
            let Some(w) = &k.warm else { continue };
            if w.users == 0 && (w.idle_since.elapsed() >= IDLE || writer_holds_lock(&k.path)) {
                if let Some(w) = k.warm.take() {
                    w.detach(&k.base);
                }
            } else {
                left = true;
            }
        }
        if !left {
            WATCHING.store(false, Ordering::SeqCst);
            return;
        }
    }
}

/// The kept instance for `path`, started when there is none (the least recently used
/// one let go of when [`KEPT`] are kept; its warm attachment detached unless in use —
/// then the call using it detaches it).
fn kept_for<'a>(kept: &'a mut Vec<Kept>, path: &Path) -> duckdb::Result<&'a mut Kept> {
    if let Some(at) = kept.iter().position(|k| k.path == path) {
        let entry = kept.remove(at);
        kept.push(entry);
    } else {
        let base = start(path)?;
        if kept.len() >= KEPT {
            let old = kept.remove(0);
            if let Some(w) = old.warm.filter(|w| w.users == 0) {
                w.detach(&old.base);
            }
        }
        kept.push(Kept {
            path: path.to_path_buf(),
            base,
            warm: None,
        });
    }
    let last = kept.len() - 1;
    Ok(&mut kept[last])
}

/// Threads a kept instance runs each query on unless [`crate::settings::QUERY_THREADS`]
/// says otherwise: one. A small query split over two threads waits for the second to
/// be scheduled, and on a busy machine that wait was most of a browse page's time.
pub const QUERY_THREADS: u16 = 1;

/// The threads to set on a kept instance (`None`: DuckDB's default, one per core).
fn query_threads() -> Option<u16> {
    let threads = match crate::settings::query_threads() {
        None => QUERY_THREADS,
        Some(Ok(n)) => n,
        Some(Err(invalid)) => {
            eprintln!("warning: {invalid}; using the default ({QUERY_THREADS})");
            QUERY_THREADS
        }
    };
    (threads > 0).then_some(threads)
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
    // Before the configuration is locked (`SET threads` is refused after).
    if let Some(threads) = query_threads() {
        conn.execute_batch(&format!("SET threads = {threads};"))?;
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
