//! The manifest of a segment set, the DuckDB stamp it is published against, and the
//! file helpers of publication (fresh names, fsynced writes).

use std::io::Write;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::{io, SetError, Unavailable};

/// Name of the manifest file inside a set's folder.
pub const MANIFEST: &str = "MANIFEST";
/// Version of the manifest this code writes and reads.
pub const MANIFEST_VERSION: u32 = 1;

/// Identity of a file's current content as the filesystem reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStamp {
    /// Length in bytes.
    pub size: u64,
    /// Modification time, nanoseconds since the Unix epoch.
    pub mtime_ns: i128,
    /// Inode number (0 where unknown).
    pub ino: u64,
}

impl FileStamp {
    /// The stamp of `path`, `None` when it does not exist.
    pub fn of(path: &Path) -> Option<Self> {
        let meta = std::fs::metadata(path).ok()?;
        let mtime_ns = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| i128::try_from(d.as_nanos()).unwrap_or(i128::MAX));
        #[cfg(unix)]
        let ino = std::os::unix::fs::MetadataExt::ino(&meta);
        #[cfg(not(unix))]
        let ino = 0;
        Some(Self {
            size: meta.len(),
            mtime_ns,
            ino,
        })
    }
}

/// The DuckDB file and its WAL, as a reader must find them for a set to hold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreStamp {
    /// `conversations.duckdb`.
    pub db: Option<FileStamp>,
    /// `conversations.duckdb.wal`.
    pub wal: Option<FileStamp>,
}

impl StoreStamp {
    /// The stamp of the store at `db` now.
    pub fn of(db: &Path) -> Self {
        let mut wal = db.as_os_str().to_owned();
        wal.push(".wal");
        Self {
            db: FileStamp::of(db),
            wal: FileStamp::of(Path::new(&wal)),
        }
    }
}

/// What a copy of the store keeps of it (`cp -r`, `rsync`, a backup restored): a
/// copy has a new inode and, unless preserved, a new modification time, so its
/// [`StoreStamp`] differs although its content does not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreContent {
    /// The store's identity (table `store_identity`: a UUID renewed by every close that
    /// wrote rows, so two stores, or two copies that were written since, never share
    /// one).
    pub id: String,
    /// Length of the DuckDB file in bytes.
    pub size: u64,
    /// SHA-256 (hex) of the DuckDB file's first [`HEAD_BYTES`] bytes: its main header
    /// and both database headers, whose checkpoint counter changes with every
    /// checkpoint — so a write by another tool, once checkpointed, changes it.
    pub head: String,
}

/// Bytes of a DuckDB file that [`StoreContent::head`] covers (the main header and the
/// two database headers, 4 KiB each).
pub const HEAD_BYTES: usize = 3 * 4096;

impl StoreContent {
    /// The content of the closed store at `db` whose identity is `id`; `None` when
    /// the file cannot be read.
    pub fn of(db: &Path, id: String) -> Option<Self> {
        Some(Self {
            id,
            size: std::fs::metadata(db).ok()?.len(),
            head: head_of(db)?,
        })
    }
}

/// SHA-256 (hex) of the first [`HEAD_BYTES`] of `db`.
fn head_of(db: &Path) -> Option<String> {
    use sha2::Digest as _;
    use std::io::Read as _;
    let mut head = Vec::with_capacity(HEAD_BYTES);
    std::fs::File::open(db)
        .ok()?
        .take(HEAD_BYTES as u64)
        .read_to_end(&mut head)
        .ok()?;
    Some(hex::encode(sha2::Sha256::digest(&head)))
}

/// The identity in the store at `db` (table `store_identity`), read from a read-only
/// DuckDB open; `None` when it cannot be opened (a writer holds it) or has none.
pub fn store_identity(db: &Path) -> Option<String> {
    let config = duckdb::Config::default()
        .access_mode(duckdb::AccessMode::ReadOnly)
        .ok()?
        .enable_autoload_extension(false)
        .ok()?;
    identity_in(&duckdb::Connection::open_with_flags(db, config).ok()?)
}

/// The identity in the store `conn` has open (table `store_identity`); `None` when it
/// has none (a store from before the table).
pub fn identity_in(conn: &duckdb::Connection) -> Option<String> {
    conn.query_row("SELECT id FROM store_identity LIMIT 1", [], |r| r.get(0))
        .ok()
}

/// One segment in the manifest: the set's fields and the kind's `E` (flattened into
/// the same JSON object, e.g. `rows`, `crc32` for the search index, `units` for the
/// embeddings).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentEntry<E> {
    /// File name inside the set's folder.
    pub file: String,
    /// The kind's fields.
    #[serde(flatten)]
    pub kind: E,
    /// Rows not masked by the tombstones.
    pub live: u64,
    /// File length in bytes.
    pub bytes: u64,
    /// Tombstone file (a bit set over the rows, little-endian `u64` words), if any.
    pub tombstones: Option<String>,
}

impl<E: super::EntryFields> SegmentEntry<E> {
    /// The entry of a segment just written as `file`: every row live, no tombstones.
    pub fn fresh(file: String, written: super::Written<E>) -> Self {
        Self {
            file,
            live: written.entry.rows(),
            bytes: written.bytes,
            kind: written.entry,
            tombstones: None,
        }
    }
}

/// The manifest: which files make up a set and what they must match. The kind's
/// fields `M` are flattened into the same JSON object and reached through `Deref`
/// (`manifest.stamp` of the search index, `manifest.model` of the embeddings).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest<M, E> {
    /// [`MANIFEST_VERSION`].
    pub version: u32,
    /// Incremented by every publication (1 after a rebuild).
    pub generation: u64,
    /// Next number for a new file name.
    pub next_file: u64,
    /// The kind's fields.
    #[serde(flatten)]
    pub kind: M,
    /// Segments, in the kind's order ([`super::SegmentKind::order`]).
    pub segments: Vec<SegmentEntry<E>>,
    /// The DuckDB files the set was published against.
    pub store: StoreStamp,
    /// The store's content as published (absent in manifests written before it, and
    /// for a store without an identity): lets a copy of the data folder keep the set
    /// ([`Manifest::holds_for`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<StoreContent>,
}

impl<M, E> Manifest<M, E> {
    /// Whether this set still describes the store at `db`: its [`StoreStamp`] is
    /// unchanged (a few `stat`s), or — a copy of the data folder — the file has the
    /// published length, headers and identity and no write-ahead log holds writes
    /// (costs reading 12 KiB and a read-only DuckDB open, only when the stamp differs).
    pub fn holds_for(&self, db: &Path) -> bool {
        let now = StoreStamp::of(db);
        if now == self.store {
            return true;
        }
        let Some(content) = &self.content else {
            return false;
        };
        let wal_empty = |w: Option<FileStamp>| w.is_none_or(|w| w.size == 0);
        wal_empty(now.wal)
            && wal_empty(self.store.wal)
            && now.db.map(|d| d.size) == Some(content.size)
            && head_of(db).as_deref() == Some(content.head.as_str())
            && store_identity(db).as_deref() == Some(content.id.as_str())
    }
}

impl<M, E> std::ops::Deref for Manifest<M, E> {
    type Target = M;

    fn deref(&self) -> &M {
        &self.kind
    }
}

impl<M: DeserializeOwned, E: DeserializeOwned> Manifest<M, E> {
    /// Reads the manifest of the set at `dir`.
    ///
    /// # Errors
    /// [`Unavailable::Missing`] when there is none, [`Unavailable::Corrupt`] when it
    /// cannot be read or is of another version.
    pub fn read(dir: &Path) -> Result<Self, Unavailable> {
        let path = dir.join(MANIFEST);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Unavailable::Missing),
            Err(e) => return Err(Unavailable::Corrupt(format!("{}: {e}", path.display()))),
        };
        let m: Self = serde_json::from_slice(&bytes)
            .map_err(|e| Unavailable::Corrupt(format!("{}: {e}", path.display())))?;
        if m.version != MANIFEST_VERSION {
            return Err(Unavailable::Corrupt(format!(
                "{}: version {} (expected {MANIFEST_VERSION})",
                path.display(),
                m.version
            )));
        }
        Ok(m)
    }
}

impl<M: Serialize, E: Serialize> Manifest<M, E> {
    /// Publishes this manifest in `dir` against the store at `db` as it is now (call
    /// after the database was checkpointed and closed): `MANIFEST.tmp` written and
    /// fsynced, renamed over `MANIFEST`, the folder fsynced; then removes the files no
    /// manifest names (all but the segments, their tombstones, `MANIFEST` and `LOCK`).
    ///
    /// `store_id` is the store's identity as the writer left it (table
    /// `store_identity`), recorded with the file's length and headers
    /// ([`StoreContent`]).
    ///
    /// # Errors
    /// [`SetError::Io`].
    pub fn publish(
        mut self,
        dir: &Path,
        db: &Path,
        store_id: Option<String>,
    ) -> Result<(), SetError> {
        self.store = StoreStamp::of(db);
        self.content = store_id.and_then(|id| StoreContent::of(db, id));
        let tmp = dir.join("MANIFEST.tmp");
        let json = serde_json::to_vec_pretty(&self).unwrap_or_default();
        write_synced(&tmp, &json)?;
        let dest = dir.join(MANIFEST);
        std::fs::rename(&tmp, &dest).map_err(io(&dest))?;
        sync_dir(dir)?;
        let keep: std::collections::HashSet<&str> = self
            .segments
            .iter()
            .flat_map(|s| std::iter::once(s.file.as_str()).chain(s.tombstones.as_deref()))
            .chain([MANIFEST, super::LOCK, super::CLOSING])
            .collect();
        if let Ok(files) = std::fs::read_dir(dir) {
            for f in files.flatten() {
                let name = f.file_name();
                if !keep.contains(name.to_string_lossy().as_ref()) {
                    let _ = std::fs::remove_file(f.path());
                }
            }
        }
        Ok(())
    }
}

/// The first file number at or above `next` and above every numbered file in `dir`
/// (`<number>.<ext>`): a new file never reuses a name, so a file some reader still
/// maps is never truncated.
pub fn first_free(dir: &Path, next: u64) -> u64 {
    let taken = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name();
            let stem = name.to_string_lossy();
            stem.split('.').next().and_then(|n| n.parse::<u64>().ok())
        })
        .max();
    taken.map_or(next, |t| next.max(t + 1))
}

/// The file name `<next, 8 digits>.<ext>`, advancing `next`.
pub fn next_name(next: &mut u64, ext: &str) -> String {
    let name = format!("{:08}.{ext}", *next);
    *next += 1;
    name
}

/// Writes `bytes` to a new file at `path` and fsyncs it.
///
/// # Errors
/// [`SetError::Io`].
pub fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), SetError> {
    let mut f = std::fs::File::create(path).map_err(io(path))?;
    f.write_all(bytes).map_err(io(path))?;
    f.sync_all().map_err(io(path))
}

/// Fsyncs the folder `dir` (its entries: a rename inside it), on Unix.
///
/// # Errors
/// [`SetError::Io`].
pub fn sync_dir(dir: &Path) -> Result<(), SetError> {
    #[cfg(unix)]
    {
        let d = std::fs::File::open(dir).map_err(io(dir))?;
        d.sync_all().map_err(io(dir))?;
    }
    Ok(())
}
