//! One immutable segment set: the protocol the conversations store's derived files
//! share — the search index ([`conversations::index`](super::conversations::index)) and
//! the L1 embeddings ([`conversations::embeddings`](super::conversations::embeddings))
//! are two kinds of it. A kind ([`SegmentKind`]) owns its segment file format, what
//! building and merging a segment do, and its own query code; this module owns the rest.
//!
//! ## Files
//!
//! A set lives in a folder beside the DuckDB file (`conversations.duckdb` →
//! `conversations.<SegmentKind::DIR_EXT>`, [`dir_of`]) holding `MANIFEST` (JSON,
//! [`Manifest`]: the segment files, their tombstone files, the kind's own fields and
//! the DuckDB stamp) and the files it names: segments `<8 digits>.<FILE_EXT>` and
//! tombstones `<8 digits>.del` (a bit set over a segment's rows, little-endian `u64`
//! words, [`Tombstones`]). A file number is never reused ([`first_free`]), and a file
//! is never modified once written, so a reader that memory-maps one can keep it after
//! a writer unlinked it.
//!
//! ## Publication and freshness
//!
//! A writer ([`Writer`]) writes new files under fresh names and fsyncs them; once the
//! database is checkpointed and closed, [`Writer::publish`] writes `MANIFEST.tmp`,
//! fsyncs it, renames it over `MANIFEST`, fsyncs the folder, and removes the files no
//! manifest names. Readers see the old or the new set, never a mix; a writer killed
//! before the rename leaves only unreferenced files, removed by the next publication.
//!
//! The manifest records the size, modification time and inode of the DuckDB file and
//! its WAL ([`StoreStamp`]) as they were after the writer closed the database. A reader
//! trusts the set only while they still match ([`SegmentSet::open`]): any later write
//! to the database makes it [`Unavailable::Stale`], and the caller answers another
//! way. A copy of the data folder changes the stamp but not the content: the manifest
//! also records the store's identity, length and headers ([`StoreContent`]), and a set
//! whose stamp differs still holds when those are unchanged ([`Manifest::holds_for`]). The next writable open sees the mismatch and rebuilds the set from the table.
//!
//! One writer at a time: the search index's writer holds `conversations.index/LOCK`
//! ([`Writer::begin_locked`]) from the store's writable open to its close, and the
//! embeddings' writer runs under that lock ([`Writer::begin`]).
//!
//! ## Incremental upkeep
//!
//! The store reports which conversations a session wrote ([`Touched`]). At close their
//! rows already in the set are masked by tombstones (a new `.del` file per segment
//! that holds some, [`SegmentKind::mask`]), and all their current rows go into one new
//! segment ([`SegmentKind::build`]). Segments are then merged by size tier: four or
//! more whose live row counts share a power-of-four tier become one
//! ([`SegmentKind::merge`], [`TIER_FANOUT`]), a segment with more masked than live
//! rows is rewritten, and so is one of an older file format
//! ([`SegmentKind::outdated`]), one group at a time until none is left. Before
//! publishing the kind may compare the result with the table
//! ([`SegmentKind::check`]); a mismatch, a damaged file or a manifest the kind does not
//! accept ([`SegmentKind::accepts`]: another embedding model) rebuilds the set from the
//! whole table.

mod bytes;
mod manifest;
mod reader;
mod source;
mod writer;

use std::collections::HashSet;
use std::fmt::Debug;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;

pub(crate) use bytes::{u32_at, u64_at};
pub use manifest::{
    first_free, identity_in, next_name, store_identity, sync_dir, write_synced, FileStamp,
    Manifest, SegmentEntry, StoreContent, StoreStamp, HEAD_BYTES, MANIFEST, MANIFEST_VERSION,
};
pub use reader::{Cache, Live, SegmentSet, Tombstones};
pub(crate) use source::{str_ref, touched_rows};
pub use writer::{Base, Update, Writer, CLOSING, LOCK, LOCK_WAIT, TIER_FANOUT};

/// The conversations one writable session changed, as (`source`, `conversation_id`).
pub type Touched = HashSet<(String, String)>;

/// Called with (rows done, rows to do) while a segment is built.
pub type Progress<'a> = &'a mut dyn FnMut(u64, u64);

/// The manifest of kind `K`.
pub type ManifestOf<K> = Manifest<<K as SegmentKind>::Meta, <K as SegmentKind>::Entry>;

/// The folder of the set of kind `K` for the store at `db`
/// (`conversations.duckdb` → `conversations.<K::DIR_EXT>`).
pub fn dir_of<K: SegmentKind>(db: &Path) -> PathBuf {
    db.with_extension(K::DIR_EXT)
}

/// Why a reader cannot use a set (the caller then answers another way).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    /// No set was written yet (a store from before it, or an in-memory one).
    #[error("no search index yet")]
    Missing,
    /// The database changed after the set was published.
    #[error("the search index is older than the store")]
    Stale,
    /// The files are damaged or of another version.
    #[error("the search index is damaged ({0})")]
    Corrupt(String),
}

/// Errors bringing a set up to date.
#[derive(Debug, thiserror::Error)]
pub enum SetError {
    /// Reading the table failed.
    #[error("reading `all_conversations`: {0}")]
    DuckDb(#[from] duckdb::Error),
    /// A segment could not be written or read (the kind's own error).
    #[error(transparent)]
    Format(Box<dyn std::error::Error + Send + Sync>),
    /// Filesystem error.
    #[error("`{path}`: {source}")]
    Io {
        /// File or folder.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The set disagrees with the table it was built from, or a file is damaged.
    #[error("{0}")]
    Mismatch(String),
}

/// The [`SetError::Io`] of `path`.
pub fn io(path: &Path) -> impl FnOnce(std::io::Error) -> SetError + '_ {
    move |source| SetError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A segment file just written: its length and the kind's entry fields.
#[derive(Debug, Clone)]
pub struct Written<E> {
    /// File length in bytes.
    pub bytes: u64,
    /// The kind's fields of the segment's manifest entry (all rows live).
    pub entry: E,
}

/// Live and table row counts that differ ([`SegmentKind::check`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Live rows of the set.
    pub held: u64,
    /// Rows of the table.
    pub table: u64,
}

/// The kind's fields of one segment entry in the manifest.
pub trait EntryFields: Serialize + DeserializeOwned + Clone + Debug + PartialEq {
    /// Rows in the segment file, masked ones included.
    fn rows(&self) -> u64;

    /// CRC-32 of the whole segment file as written, when the kind records one
    /// ([`verify_files`] checks it).
    fn crc32(&self) -> Option<u32> {
        None
    }
}

/// Segment sets up to this many bytes are CRC-checked at every writable open (about
/// 2M messages of search index; at 1M, 574 MB, the whole `skills status` with that
/// pass took 0.20 s warm, 0.47 s the first time, 2026-12-06); larger ones only by
/// `skills status`, each writable open checking their lengths, so an ingest of a 10M
/// store does not read its 5.7 GB index first.
pub const WRITER_CRC_BYTES: u64 = 1 << 30;

/// Checks the segment files `manifest` names in `dir`: each is a plain file whose
/// length is the manifest's `bytes` and, with `crc` and when the kind records one
/// (the search index does; the embeddings and tombstone files do not), whose CRC-32
/// matches (reading every byte, streamed). Readers only compare lengths (their calls
/// must not read the whole set); `skills status` checks everything and writable opens
/// check sets up to [`WRITER_CRC_BYTES`], so a damaged file is reported and the next
/// write rebuilds the set.
///
/// # Errors
/// What differs, naming the file; [`VerifyError::Gone`] when a file is missing (a
/// writer may have published a new manifest meanwhile: read it again).
pub fn verify_files<K: SegmentKind>(
    dir: &Path,
    manifest: &ManifestOf<K>,
    crc: bool,
) -> Result<(), VerifyError> {
    use std::io::Read as _;
    let bad = |file: &str, why: String| VerifyError::Damaged(format!("{file}: {why}"));
    for entry in &manifest.segments {
        let path = checked_path(dir, entry)?;
        let Some(want) = entry.kind.crc32().filter(|_| crc) else {
            continue;
        };
        let file = std::fs::File::open(&path).map_err(|e| bad(&entry.file, e.to_string()))?;
        let mut file = file.take(entry.bytes);
        let mut hasher = crc32fast::Hasher::new();
        let mut buf = vec![0u8; 1 << 20];
        loop {
            match file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => hasher.update(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(bad(&entry.file, e.to_string())),
            }
        }
        let got = hasher.finalize();
        if got != want {
            return Err(bad(
                &entry.file,
                format!("CRC-32 {got:08x}, the manifest says {want:08x}"),
            ));
        }
    }
    Ok(())
}

/// Whether writable opens CRC-check the set of `manifest` ([`WRITER_CRC_BYTES`]); a
/// larger one only by its files' lengths.
pub fn writers_check_crc<M, E>(manifest: &Manifest<M, E>) -> bool {
    manifest.segments.iter().map(|e| e.bytes).sum::<u64>() <= WRITER_CRC_BYTES
}

/// The path of `entry`'s file in `dir`, once its name stays inside `dir` and it is a
/// regular file (never followed through a link) of the manifest's length: one stat,
/// no byte read. Readers check every segment so, [`verify_files`] before its CRC.
///
/// # Errors
/// [`VerifyError::Gone`] when the file does not exist, [`VerifyError::Damaged`]
/// otherwise, naming it.
pub(crate) fn checked_path<E>(dir: &Path, entry: &SegmentEntry<E>) -> Result<PathBuf, VerifyError> {
    let bad = |why: String| VerifyError::Damaged(format!("{}: {why}", entry.file));
    // A manifest is a file on disk like any other: never follow it out of `dir`.
    if Path::new(&entry.file).file_name() != Some(std::ffi::OsStr::new(&entry.file)) {
        return Err(bad("not a file name inside the set's folder".into()));
    }
    let path = dir.join(&entry.file);
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(VerifyError::Gone(entry.file.clone()))
        }
        Err(e) => return Err(bad(e.to_string())),
    };
    if !meta.is_file() {
        return Err(bad("not a regular file".into()));
    }
    if meta.len() != entry.bytes {
        return Err(bad(format!(
            "{} bytes, the manifest says {}",
            meta.len(),
            entry.bytes
        )));
    }
    Ok(path)
}

/// Why [`verify_files`] refused a set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// A file is damaged: what differs, naming it.
    #[error("{0}")]
    Damaged(String),
    /// A file the manifest names is gone (replaced by a writer's publication, or lost).
    #[error("{0}: missing")]
    Gone(String),
}

/// One kind of segment set: the file format, building and merging segments, and the
/// kind's own manifest fields. Everything else — file names, tombstones, the manifest,
/// publication, the lock, the stamp check, merge policy, rebuilds — is the set's.
///
/// Reading needs no value of the kind (associated functions); writing takes one
/// (`&mut self`), which carries what building needs (an embedding model) and may
/// count what it did (messages embedded).
pub trait SegmentKind {
    /// What the set holds, in messages ("search index", "embeddings").
    const NAME: &'static str;
    /// Extension of the set's folder beside the database.
    const DIR_EXT: &'static str;
    /// Extension of its segment files.
    const FILE_EXT: &'static str;
    /// The rebuild reason when no manifest exists.
    const MISSING: &'static str;
    /// The rebuild reason when the manifest is older than the store.
    const STALE: &'static str;

    /// The kind's manifest fields, flattened into the manifest's JSON object.
    type Meta: Serialize + DeserializeOwned + Clone + Debug + PartialEq;
    /// The kind's segment entry fields, flattened into each entry's JSON object.
    type Entry: EntryFields;
    /// One opened (memory-mapped) segment file.
    type Segment;

    /// Opens the segment file at `path`, checking its shape (and that it fits `meta`,
    /// e.g. the vector dimension).
    ///
    /// # Errors
    /// What is wrong, naming the file.
    fn open(path: &Path, meta: &Self::Meta) -> Result<Self::Segment, String>;

    /// Rows in an opened segment, masked ones included.
    fn rows(segment: &Self::Segment) -> usize;

    /// True when the file at `path` is of an older format that the next close
    /// rewrites once (merged alone).
    fn outdated(path: &Path) -> bool;

    /// Writes the rows of the table (of the `only` conversations, when given) as one
    /// segment at `path` (fsynced), calling `progress` as it goes.
    ///
    /// # Errors
    /// [`SetError::DuckDb`] when the table cannot be read (the update then fails),
    /// any other when the segment cannot be written (the set is then rebuilt).
    fn build(
        &mut self,
        conn: &duckdb::Connection,
        only: Option<&Touched>,
        path: &Path,
        progress: Progress<'_>,
    ) -> Result<Written<Self::Entry>, SetError>;

    /// Writes the live rows of `parts` as one segment at `path` (fsynced).
    ///
    /// # Errors
    /// [`SetError`] when a part is damaged or the file cannot be written.
    fn merge(
        &mut self,
        parts: &[Live<Self::Segment>],
        path: &Path,
    ) -> Result<Written<Self::Entry>, SetError>;

    /// Sets the bits of `dead` (as long as the segment's rows) of the rows of
    /// `segment` that belong to `touched` conversations and are not masked yet;
    /// updates the kind's `entry` fields for them; returns how many were masked.
    ///
    /// # Errors
    /// [`SetError::Mismatch`] when the segment is damaged.
    fn mask(
        &self,
        segment: &Self::Segment,
        touched: &Touched,
        dead: &mut Tombstones,
        entry: &mut Self::Entry,
    ) -> Result<u64, SetError>;

    /// The kind's manifest fields for the set made of `segments`.
    fn meta(&self, segments: &[SegmentEntry<Self::Entry>]) -> Self::Meta;

    /// Whether an update may start from a manifest with fields `base`; `Err` says
    /// why not (the set is then rebuilt). All by default.
    ///
    /// # Errors
    /// The rebuild reason.
    fn accepts(&self, base: &Self::Meta) -> Result<(), String> {
        let _ = base;
        Ok(())
    }

    /// Compares a set about to be published with the table; `Some` when they differ
    /// (after an incremental update the set is then rebuilt; after a rebuild the
    /// update fails). Never differs by default.
    ///
    /// # Errors
    /// [`SetError::DuckDb`].
    fn check(
        &self,
        conn: &duckdb::Connection,
        meta: &Self::Meta,
    ) -> Result<Option<Counts>, SetError> {
        let _ = (conn, meta);
        Ok(None)
    }

    /// Puts the manifest's segments in the kind's order (default: as they are —
    /// older segments first, then the new one, then merges).
    fn order(segments: &mut [SegmentEntry<Self::Entry>]) {
        let _ = segments;
    }
}
