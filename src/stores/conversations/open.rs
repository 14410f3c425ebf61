//! Opening the store: writable (ingest, with the index lock and the embeddings'
//! manifest taken first), read-only and sandboxed (engines), in memory; and the
//! per-query connections every reader and writer takes.

use std::path::Path;
use std::sync::Mutex;

use duckdb::Connection;

use super::lock::{wait_for_lock, READ_LOCK_WAIT, WRITE_LOCK_WAIT};
use super::schema::CREATE_TABLE;
use super::{duck, embeddings, index, ConversationStore};
use crate::cancel::{Cancel, OnStop};
use crate::stores::StoreError;

impl ConversationStore {
    /// Opens (creating when missing) a writable store and its table. Waits up to 30 s
    /// while another process holds the file (a search in `skills serve` holds it for
    /// one call).
    ///
    /// # Errors
    /// [`StoreError::Locked`] when the file stays locked;
    /// [`StoreError::Io`] when the parent directory cannot be created,
    /// [`StoreError::DuckDb`] when DuckDB cannot open the file (e.g. another process
    /// holds its write lock).
    pub fn open_rw(path: &Path) -> Result<Self, StoreError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs_err::create_dir_all(parent)?;
        }
        // The index lock first: the manifest is compared with the database as the
        // last writer left it, before this open changes anything.
        let index = index::Writer::begin(path)
            .map_err(|e| StoreError::Io(std::io::Error::other(format!("search index: {e}"))))?;
        let embed_base = Some(embeddings::Base::read(path));
        super::WRITES.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let conn = wait_for_lock(path, WRITE_LOCK_WAIT, || Connection::open(path))?;
        conn.execute_batch(CREATE_TABLE)
            .map_err(|e| duck(path, e))?;
        super::secrets::init(&conn).map_err(|e| duck(path, e))?;
        super::summary::init(&conn).map_err(|e| duck(path, e))?;
        super::changes::init(&conn).map_err(|e| duck(path, e))?;
        Ok(Self {
            path: path.to_path_buf(),
            attached: None,
            conn: Mutex::new(Some(conn)),
            marks_injected: std::sync::OnceLock::new(),
            index: Some(index),
            touched: Mutex::default(),
            embed_base,
            embed: None,
            stop: None,
        })
    }

    /// Opens an existing store read-only, sandboxed for skill SQL (as
    /// [`crate::stores::sandbox::duckdb_config`]: no files, network, extensions or
    /// settings beyond this one file), by attaching it to an in-memory instance kept
    /// for its path (`attach`): the attachment stays between calls until a writer
    /// takes the store's writer lock (or 10 s pass unused), so a long-running
    /// `skills serve` never keeps `skills ingest` out and always sees the latest
    /// import. Waits up to 10 s while another process writes it (`skills ingest`).
    ///
    /// # Errors
    /// [`StoreError::Locked`] when the file stays locked;
    /// [`StoreError::Missing`] when the file does not exist; [`StoreError::DuckDb`] otherwise.
    pub fn open_ro(path: &Path) -> Result<Self, StoreError> {
        if !path.exists() {
            return Err(StoreError::Missing {
                store: crate::stores::Store::Conversations,
                path: path.to_path_buf(),
            });
        }
        // Readers run SQL from skill folders: the sandbox's configuration (external
        // access off, configuration locked) is applied as the file is opened.
        // Attached to a kept instance rather than opened: starting an instance costs
        // more than a browse page may take (`attach`).
        let attached = Mutex::new(None);
        let conn = wait_for_lock(path, READ_LOCK_WAIT, || {
            let (conn, handle) = super::attach::attach(path)?;
            *attached
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(handle);
            Ok(conn)
        })?;
        Ok(Self {
            path: path.to_path_buf(),
            attached: attached
                .into_inner()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
            conn: Mutex::new(Some(conn)),
            marks_injected: std::sync::OnceLock::new(),
            index: None,
            touched: Mutex::default(),
            embed_base: None,
            embed: None,
            stop: None,
        })
    }

    /// An in-memory store (tests, benchmarks; feature `bench`).
    #[cfg(any(test, feature = "bench"))]
    ///
    /// # Errors
    /// [`StoreError::DuckDb`] if DuckDB cannot start.
    pub fn open_in_memory() -> Result<Self, StoreError> {
        let path = std::path::PathBuf::from(":memory:");
        let conn = Connection::open_in_memory().map_err(|e| duck(&path, e))?;
        conn.execute_batch(CREATE_TABLE)
            .map_err(|e| duck(&path, e))?;
        super::summary::init(&conn).map_err(|e| duck(&path, e))?;
        super::changes::init(&conn).map_err(|e| duck(&path, e))?;
        Ok(Self {
            path,
            attached: None,
            conn: Mutex::new(Some(conn)),
            marks_injected: std::sync::OnceLock::new(),
            index: None,
            touched: Mutex::default(),
            embed_base: None,
            embed: None,
            stop: None,
        })
    }

    /// True when the table has column `is_injected`. A store last written by a version
    /// before that column is opened read-only without it (any `skills ingest` adds
    /// it); its rows then count as not injected, and queries must not name it.
    ///
    /// # Errors
    /// [`StoreError::DuckDb`].
    pub fn marks_injected(&self) -> Result<bool, StoreError> {
        if let Some(known) = self.marks_injected.get() {
            return Ok(*known);
        }
        let conn = self.connection()?;
        let has: bool = conn
            .query_row(
                "SELECT count(*) > 0 FROM duckdb_columns()
                 WHERE table_name = 'all_conversations' AND column_name = 'is_injected'
                   AND database_name = current_database()",
                [],
                |r| r.get(0),
            )
            .map_err(|e| self.error(e))?;
        Ok(*self.marks_injected.get_or_init(|| has))
    }

    /// A fresh connection to the same database, for one query; the store's lock is
    /// held only while cloning. After [`ConversationStore::release`], the file is
    /// opened again first (waiting for readers' locks as [`ConversationStore::open_rw`]
    /// does).
    ///
    /// # Errors
    /// [`StoreError::DuckDb`] when the connection cannot be cloned or the file opened
    /// again, [`StoreError::Locked`] when it stays locked.
    pub fn connection(&self) -> Result<Connection, StoreError> {
        let conn = self.fresh()?;
        if let Some(hook) = self.interrupt_on_stop(&conn)? {
            self.stop_hooks(hook);
        }
        Ok(conn)
    }

    /// A connection for one query of a skill ([`crate::engines::sql`]): on a read-only
    /// store's warm attachment, one kept from an earlier call when one is idle — made
    /// the attachment's default database already, with the statements it prepared
    /// (`prepare_cached`) — and kept for the next call when dropped after a query that
    /// ended normally ([`Pooled::discard`] otherwise); else a connection as
    /// [`ConversationStore::connection`]'s. Interrupted as those are when the call
    /// stops.
    ///
    /// # Errors
    /// As [`ConversationStore::connection`]'s.
    pub fn query_connection(&self) -> Result<Pooled, StoreError> {
        let home = self
            .attached
            .as_ref()
            .and_then(super::attach::Attached::warm_alias)
            .map(|alias| (self.path.clone(), alias.to_owned()));
        let leased = home
            .as_ref()
            .and_then(|(path, alias)| super::attach::lease(path, alias));
        let conn = match leased {
            Some(conn) => conn,
            None => self.fresh()?,
        };
        let stop = self.interrupt_on_stop(&conn)?;
        Ok(Pooled {
            conn: Some(conn),
            home,
            stop,
            cancel: self.stop.as_ref().map(|(cancel, _)| cancel.clone()),
        })
    }

    /// A new connection of this store (a clone of its own), made the attachment's
    /// default database for a read-only store.
    fn fresh(&self) -> Result<Connection, StoreError> {
        let mut guard = self
            .conn
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let conn = match guard.as_ref() {
            Some(conn) => conn.try_clone(),
            None => {
                let conn =
                    wait_for_lock(&self.path, WRITE_LOCK_WAIT, || Connection::open(&self.path))?;
                let clone = conn.try_clone();
                *guard = Some(conn);
                clone
            }
        }
        .map_err(|e| duck(&self.path, e))?;
        drop(guard);
        if let Some(attached) = &self.attached {
            attached.use_on(&conn).map_err(|e| duck(&self.path, e))?;
        }
        Ok(conn)
    }

    /// `conn` interrupted when this store's call stops, until the returned guard is
    /// dropped (`None` for a store of no call).
    ///
    /// # Errors
    /// [`StoreError::Stopped`] when the call has stopped already.
    fn interrupt_on_stop(&self, conn: &Connection) -> Result<Option<OnStop>, StoreError> {
        let Some((cancel, _)) = &self.stop else {
            return Ok(None);
        };
        cancel.check().map_err(StoreError::Stopped)?;
        let handle = conn.interrupt_handle();
        Ok(Some(cancel.on_stop(move || handle.interrupt())))
    }

    /// Keeps `hook` registered for as long as this store lives.
    fn stop_hooks(&self, hook: OnStop) {
        if let Some((_, hooks)) = &self.stop {
            hooks
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(hook);
        }
    }

    /// Lets go of the database file until the next query: a writable file store
    /// closes its database (DuckDB then releases the file's lock once no connection
    /// handed out is open), so readers — `skills serve`'s tool calls — get in while an
    /// ingest parses a long file; the next [`ConversationStore::connection`] opens it
    /// again. The search index's lock stays held, so no other writer gets in between.
    /// A no-op for read-only and in-memory stores, and when closing fails (the file
    /// then stays held).
    pub fn release(&self) {
        if self.index.is_none() {
            return;
        }
        let mut guard = self
            .conn
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(conn) = guard.take() {
            if let Err((conn, _)) = conn.close() {
                *guard = Some(conn);
            }
        }
    }

    /// This store with every connection it hands out ([`ConversationStore::connection`])
    /// interrupted when `cancel` stops (DuckDB's `interrupt()`: the running query fails),
    /// and refused once it has — what an engine call's store is.
    #[must_use]
    pub fn interrupted_by(mut self, cancel: &Cancel) -> Self {
        self.stop = Some((cancel.clone(), Mutex::new(Vec::new())));
        self
    }
}

/// A connection for one query ([`ConversationStore::query_connection`]): given back to
/// its warm attachment's pool when dropped, unless [`Pooled::discard`]ed, the call
/// stopped (an interrupt may still be pending on it), or the attachment is no longer
/// the warm one.
pub struct Pooled {
    /// `None` once dropped.
    conn: Option<Connection>,
    /// The store file and the warm attachment's alias to give it back to.
    home: Option<(std::path::PathBuf, String)>,
    /// The call's interrupt of this connection, removed before it is given back.
    stop: Option<OnStop>,
    cancel: Option<Cancel>,
}

impl Pooled {
    /// Closes this connection when dropped rather than keeping it: after a query that
    /// failed or was interrupted.
    pub fn discard(&mut self) {
        self.home = None;
    }
}

impl std::ops::Deref for Pooled {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        self.conn
            .as_ref()
            .unwrap_or_else(|| unreachable!("a pooled connection is taken only when dropped"))
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        // The interrupt hook first: once it is gone, only an earlier stop can have
        // interrupted the connection, and `stopped` says so.
        drop(self.stop.take());
        let stopped = self.cancel.as_ref().is_some_and(|c| c.stopped().is_some());
        if let (Some(conn), Some((path, alias))) = (self.conn.take(), self.home.take()) {
            if !stopped {
                super::attach::give_back(&path, &alias, conn);
            }
        }
    }
}
