//! The search index of the conversations store: `all_conversations` in
//! search-conversations' order (`created DESC, source, conversation_id, message_id`),
//! as immutable [`segment`] files answered by memory-mapping — one
//! kind ([`IndexKind`]) of [`segments`](crate::stores::segments) set, which owns the
//! files, the manifest, publication, the lock, tombstones and tier merges.
//!
//! ## Where it lives and when it is trusted
//!
//! `conversations.index/` beside `conversations.duckdb` holds `MANIFEST` (JSON: the
//! segment files, their tombstone files, the stamp) and the files it names. Every
//! writable open of the store ([`ConversationStore::open_rw`](super::ConversationStore::open_rw))
//! takes `conversations.index/LOCK` until [`ConversationStore::close`](super::ConversationStore::close),
//! which brings the index up to date and publishes a new manifest. A reader trusts
//! the index only while the DuckDB stamp still matches ([`Index::open`]); otherwise
//! the caller answers from DuckDB, and the next writable close rebuilds the index. A
//! reader that finds the index stale while a writer still holds `LOCK` and is closing
//! (`CLOSING`: an ingest about to publish, such as `skills serve`'s background import at
//! the end of a run) may wait for it ([`wait_for_writer`]): the writer publishes the
//! embeddings, then the index, then lets go of the lock. While the writer still imports,
//! readers answer from DuckDB without waiting.
//!
//! ## What this kind adds
//!
//! A segment holds the rows of one set of conversations in search order, so a merge
//! is a k-way merge by key. The manifest's [`Stamp`] holds the live row count, the
//! newest `created` and the XOR of the live rows' key hashes; before publishing, the
//! count and the newest time are compared with the table and a mismatch rebuilds the
//! index ([`Stamp::of_table`] computes the whole stamp from the table for tests,
//! reading every key). The queries are in `index/query.rs`.

mod query;
pub mod segment;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::search::scan::{self, Corrupt};
use crate::stores::segments::{
    self as set, str_ref, touched_rows, Counts, EntryFields, Live, Progress, SegmentKind,
    SegmentSet, SetError, Tombstones, Written,
};
use segment::{
    key_hash, order, RowIn, Segment, SegmentBuilder, SegmentError, HAS_QUESTION, NOT_INJECTED,
};

pub use crate::stores::segments::{
    FileStamp, StoreStamp, Touched, Unavailable, MANIFEST, MANIFEST_VERSION,
};
pub use query::{Hit, KeywordHit, KeywordQuery, Neighbourhood, Query, NEIGHBOUR_GAP};

/// The index folder of the store at `db` (`conversations.duckdb` → `conversations.index`).
pub fn dir_of(db: &Path) -> PathBuf {
    set::dir_of::<IndexKind>(db)
}

/// An opened index: its segments, memory-mapped; queried by the methods in
/// `index/query.rs` ([`Index::search`], [`Index::keyword`], [`Index::lookup`]).
pub type Index = SegmentSet<IndexKind>;
/// Opened indexes kept across calls of a long-running process (`skills serve`).
pub type Cache = set::Cache<IndexKind>;
/// The index manifest: the set's fields and [`IndexMeta`] (`manifest.stamp`).
pub type Manifest = set::Manifest<IndexMeta, IndexEntry>;
/// One segment in the manifest, with [`IndexEntry`]'s fields.
pub type SegmentEntry = set::SegmentEntry<IndexEntry>;

/// What the live rows of the index are, to compare with the table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    /// Live rows.
    pub rows: u64,
    /// Newest `created` (µs since the epoch), `None` when empty.
    pub max_created_us: Option<i64>,
    /// XOR of [`segment::key_hash`] over the live rows, 16 hex digits.
    pub key_xor: String,
}

/// The index's own manifest fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexMeta {
    /// The live rows' figures.
    pub stamp: Stamp,
}

/// The index's own fields of a segment entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexEntry {
    /// Rows in the file.
    pub rows: u64,
    /// CRC-32 of the file.
    pub crc32: u32,
    /// XOR of the live rows' key hashes (16 hex digits).
    pub key_xor: String,
    /// Newest `created` of a live row (µs), `None` when none is live.
    pub max_created_us: Option<i64>,
}

impl EntryFields for IndexEntry {
    fn rows(&self) -> u64 {
        self.rows
    }

    fn crc32(&self) -> Option<u32> {
        Some(self.crc32)
    }
}

fn xor_of(hex: &str) -> u64 {
    u64::from_str_radix(hex, 16).unwrap_or(0)
}

impl From<SegmentError> for SetError {
    fn from(e: SegmentError) -> Self {
        Self::Format(Box::new(e))
    }
}

/// The search index as a [`SegmentKind`]: [`segment`] files (`.seg`) of rows in
/// search order.
#[derive(Debug, Clone, Copy, Default)]
pub struct IndexKind;

impl SegmentKind for IndexKind {
    const NAME: &'static str = "search index";
    const DIR_EXT: &'static str = "index";
    const FILE_EXT: &'static str = "seg";
    const MISSING: &'static str = "no search index yet";
    const STALE: &'static str = "the search index is older than the store";

    type Meta = IndexMeta;
    type Entry = IndexEntry;
    type Segment = Segment;

    fn open(path: &Path, _meta: &IndexMeta) -> Result<Segment, String> {
        Segment::open(path).map_err(|e| e.to_string())
    }

    fn rows(segment: &Segment) -> usize {
        segment.len()
    }

    /// A file of an older format is rewritten: version 1 (no postings) and version 2
    /// (no project column; its merge fails, so the index is rebuilt from the table),
    /// version 3 (postings of unstemmed words; merged, which builds them again).
    fn outdated(path: &Path) -> bool {
        Segment::open(path).is_ok_and(|s| s.version() < segment::VERSION)
    }

    fn build(
        &mut self,
        conn: &duckdb::Connection,
        only: Option<&Touched>,
        path: &Path,
        _progress: Progress<'_>,
    ) -> Result<Written<IndexEntry>, SetError> {
        Ok(written(build_from_table(conn, only, path)?))
    }

    fn merge(
        &mut self,
        parts: &[Live<Segment>],
        path: &Path,
    ) -> Result<Written<IndexEntry>, SetError> {
        Ok(written(merge(parts, path)?))
    }

    fn mask(
        &self,
        seg: &Segment,
        touched: &Touched,
        dead: &mut Tombstones,
        entry: &mut IndexEntry,
    ) -> Result<u64, SetError> {
        let (rows, masked_xor) = mask(seg, touched, dead)?;
        if rows > 0 {
            entry.key_xor = format!("{:016x}", xor_of(&entry.key_xor) ^ masked_xor);
            entry.max_created_us = first_live_created(seg, dead);
        }
        Ok(rows)
    }

    fn meta(&self, segments: &[set::SegmentEntry<IndexEntry>]) -> IndexMeta {
        let key_xor = segments
            .iter()
            .map(|s| xor_of(&s.kind.key_xor))
            .fold(0, |a, b| a ^ b);
        IndexMeta {
            stamp: Stamp {
                rows: segments.iter().map(|s| s.live).sum(),
                max_created_us: segments.iter().filter_map(|s| s.kind.max_created_us).max(),
                key_xor: format!("{key_xor:016x}"),
            },
        }
    }

    /// The live row count and the newest `created` against the table's (one
    /// aggregate, checked at every close).
    fn check(
        &self,
        conn: &duckdb::Connection,
        meta: &IndexMeta,
    ) -> Result<Option<Counts>, SetError> {
        let (rows, newest) = table_figures(conn)?;
        Ok(
            (rows != meta.stamp.rows || newest != meta.stamp.max_created_us).then_some(Counts {
                held: meta.stamp.rows,
                table: rows,
            }),
        )
    }

    /// Newest data first: by newest live `created`, descending, then by file name.
    fn order(segments: &mut [set::SegmentEntry<IndexEntry>]) {
        segments.sort_by(|a, b| {
            b.kind
                .max_created_us
                .cmp(&a.kind.max_created_us)
                .then_with(|| a.file.cmp(&b.file))
        });
    }
}

/// The entry fields of a segment file just written.
fn written(w: segment::Written) -> Written<IndexEntry> {
    Written {
        bytes: w.bytes,
        entry: IndexEntry {
            rows: w.rows,
            crc32: w.crc32,
            key_xor: format!("{:016x}", w.key_xor),
            max_created_us: (w.rows > 0).then_some(w.max_created_us),
        },
    }
}

/// What [`Writer::update`] did, for the ingest summary.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct UpdateReport {
    /// True when the index was built from the whole table.
    pub rebuilt: bool,
    /// Why it was rebuilt, when it was.
    pub reason: Option<String>,
    /// Rows written into new segments (including merges).
    pub rows_written: u64,
    /// Segments after the update.
    pub segments: usize,
    /// Live rows after the update.
    pub rows: u64,
    /// Bytes of all segment files.
    pub bytes: u64,
}

/// The writer side, held by a writable store from open to close: holds
/// `conversations.index/LOCK`, under which the embeddings are written too.
#[derive(Debug)]
pub struct Writer(set::Writer<IndexKind>);

impl Writer {
    /// Takes the index lock of the store at `db` (waiting for another writer to
    /// publish) and reads the current manifest — call before opening the database,
    /// so the stamp is compared with the database as the last writer left it.
    ///
    /// # Errors
    /// [`SetError::Io`] when the folder or the lock cannot be created.
    pub fn begin(db: &Path) -> Result<Self, SetError> {
        set::Writer::begin_locked(db).map(Self)
    }

    /// Brings the index up to date with the table through `conn`, given the
    /// conversations this session changed; returns the manifest to publish once the
    /// database is closed ([`Writer::publish`]).
    ///
    /// # Errors
    /// [`SetError`] when the table cannot be read or a file cannot be written.
    pub fn update(
        &self,
        conn: &duckdb::Connection,
        touched: &Touched,
    ) -> Result<(Manifest, UpdateReport), SetError> {
        let (manifest, u) = self
            .0
            .update(&mut IndexKind, conn, touched, &mut |_, _| {})?;
        let report = UpdateReport {
            rebuilt: u.rebuilt,
            reason: u.reason,
            rows_written: u.written,
            segments: u.segments,
            rows: u.live,
            bytes: u.bytes,
        };
        Ok((manifest, report))
    }

    /// Publishes `manifest` against the database as it is now (call after the
    /// database was checkpointed and closed), then removes files no manifest names;
    /// `store_id` is the store's identity ([`crate::stores::segments`]' `StoreContent`).
    ///
    /// # Errors
    /// [`SetError::Io`].
    pub fn publish(self, manifest: Manifest, store_id: Option<String>) -> Result<(), SetError> {
        self.0.publish(manifest, store_id)
    }
}

/// Sets the tombstone bits of the rows of `seg` that belong to `touched`
/// conversations and are not masked yet: (rows masked, XOR of their key hashes).
fn mask(seg: &Segment, touched: &Touched, dead: &mut Tombstones) -> Result<(u64, u64), SetError> {
    let corrupt = |_| SetError::Mismatch(format!("{} is damaged", seg.path()));
    let mut wanted: HashSet<(u16, u32)> = HashSet::new();
    for (source, conv) in touched {
        if let (Some(s), Some(c)) = (
            seg.source_id(source).map_err(corrupt)?,
            seg.conversation_id_of(conv).map_err(corrupt)?,
        ) {
            wanted.insert((s, c));
        }
    }
    let (mut rows, mut key_xor) = (0, 0);
    if wanted.is_empty() {
        return Ok((rows, key_xor));
    }
    let (sources, convs) = (seg.source_ids(), seg.conversation_ids());
    for row in 0..seg.len() {
        let (Some(&s), Some(&c)) = (sources.get(row), convs.get(row)) else {
            return Err(corrupt(Corrupt));
        };
        if wanted.contains(&(s, c)) && dead.kill(row) {
            rows += 1;
            let (_, source, conv, msg) = seg.key(row).map_err(corrupt)?;
            key_xor ^= key_hash(source, conv, msg);
        }
    }
    Ok((rows, key_xor))
}

fn first_live_created(seg: &Segment, dead: &Tombstones) -> Option<i64> {
    (0..seg.len())
        .find(|&r| !dead.is_dead(r))
        .and_then(|r| seg.created().get(r).copied())
}

/// Row count and newest `created` (µs) of the table: one aggregate, checked at every
/// close.
fn table_figures(conn: &duckdb::Connection) -> Result<(u64, Option<i64>), SetError> {
    let (rows, max): (i64, Option<i64>) = conn.query_row(
        "SELECT count(*), max(epoch_us(created)) FROM all_conversations",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    Ok((u64::try_from(rows).unwrap_or(0), max))
}

impl Stamp {
    /// The stamp of the table itself, key hashes included: reads every key, so it is
    /// what tests compare a manifest's stamp with, while each close checks only the
    /// count and the newest time (a full read of the keys cost seconds at 1M rows).
    ///
    /// # Errors
    /// The DuckDB error of the scan. Tests only (feature `bench`).
    #[cfg(any(test, feature = "bench"))]
    pub fn of_table(conn: &duckdb::Connection) -> Result<Self, SetError> {
        table_stamp(conn)
    }
}

#[cfg(any(test, feature = "bench"))]
fn table_stamp(conn: &duckdb::Connection) -> Result<Stamp, SetError> {
    let (rows, max_created_us) = table_figures(conn)?;
    let mut stmt =
        conn.prepare("SELECT source, conversation_id, message_id FROM all_conversations")?;
    let mut it = stmt.query([])?;
    let mut xor = 0u64;
    while let Some(r) = it.next()? {
        let (s, c, m) = (str_ref(r, 0)?, str_ref(r, 1)?, str_ref(r, 2)?);
        xor ^= key_hash(s, c, m);
    }
    Ok(Stamp {
        rows,
        max_created_us,
        key_xor: format!("{xor:016x}"),
    })
}

const ROW_SQL: &str = "SELECT epoch_us(created), source, conversation_id, message_id, role, \
     (has_question = 1) AS q, (is_injected IS FALSE) AS typed, content, project FROM all_conversations";
const ROW_ORDER: &str = " ORDER BY created DESC, source ASC, conversation_id ASC, message_id ASC";

/// Writes the rows of the table (of the `only` conversations, when given) as a
/// segment at `path`.
fn build_from_table(
    conn: &duckdb::Connection,
    only: Option<&Touched>,
    path: &Path,
) -> Result<segment::Written, SetError> {
    let sql = if let Some(touched) = only {
        let rows = touched_rows(conn, "index_touched", touched)?;
        format!("{ROW_SQL} WHERE{rows}{ROW_ORDER}")
    } else {
        format!("{ROW_SQL}{ROW_ORDER}")
    };
    let mut builder = SegmentBuilder::new();
    let (mut folded, mut case) = (Vec::new(), Vec::new());
    {
        let mut stmt = conn.prepare(&sql)?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            folded.clear();
            case.clear();
            let content = str_ref(r, 7)?;
            scan::fold_with_case(content, segment::PREVIEW_CHARS, &mut folded, &mut case);
            let created_us: i64 = r.get(0)?;
            if !(MIN_US..=MAX_US).contains(&created_us) {
                return Err(SetError::Mismatch(format!(
                    "`created` {created_us} µs is outside the years 1–9999 the index shows"
                )));
            }
            let flags = if r.get::<_, bool>(5)? {
                HAS_QUESTION
            } else {
                0
            } | if r.get::<_, bool>(6)? {
                NOT_INJECTED
            } else {
                0
            };
            builder.push(&RowIn {
                created_us,
                source: str_ref(r, 1)?,
                conversation_id: str_ref(r, 2)?,
                message_id: str_ref(r, 3)?,
                role: str_ref(r, 4)?,
                project: match r.get_ref(8)? {
                    duckdb::types::ValueRef::Null => None,
                    _ => Some(str_ref(r, 8)?),
                },
                flags,
                folded: &folded,
                case: &case,
            })?;
        }
    }
    if only.is_some() {
        conn.execute_batch("DROP TABLE IF EXISTS index_touched")?;
    }
    Ok(builder.write(path)?)
}

/// 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999999Z in µs: the range DuckDB's
/// `strftime` and the index format the same way.
const MIN_US: i64 = -62_135_596_800_000_000;
const MAX_US: i64 = 253_402_300_799_999_999;

/// Merges the live rows of `parts` into one segment at `path`.
fn merge(parts: &[Live<Segment>], path: &Path) -> Result<segment::Written, SetError> {
    let corrupt = |_| {
        SetError::Mismatch(format!(
            "a segment merged into {} is damaged",
            path.display()
        ))
    };
    // A file before version 3 has no project column to carry over: the caller
    // rebuilds the index from the table instead.
    if let Some(old) = parts.iter().find(|l| !l.seg.has_projects()) {
        return Err(SetError::Mismatch(format!(
            "{} predates the project column (format version {})",
            old.seg.path(),
            old.seg.version()
        )));
    }
    let mut cursor = vec![0usize; parts.len()];
    let mut builder = SegmentBuilder::new();
    loop {
        let mut pick: Option<usize> = None;
        for (i, live) in parts.iter().enumerate() {
            while cursor[i] < live.seg.len() && live.is_dead(cursor[i]) {
                cursor[i] += 1;
            }
            if cursor[i] >= live.seg.len() {
                continue;
            }
            pick = match pick {
                None => Some(i),
                Some(p) => {
                    let a = parts[p].seg.key(cursor[p]).map_err(corrupt)?;
                    let b = live.seg.key(cursor[i]).map_err(corrupt)?;
                    if order(b, a) == std::cmp::Ordering::Less {
                        Some(i)
                    } else {
                        Some(p)
                    }
                }
            };
        }
        let Some(p) = pick else { break };
        builder.push(&parts[p].seg.row(cursor[p]).map_err(corrupt)?)?;
        cursor[p] += 1;
    }
    Ok(builder.write(path)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A manifest as the code before `stores::segments` wrote it (its fields in that
    /// order) reads into the same values and writes back the same JSON object.
    #[test]
    fn a_manifest_written_before_the_segment_set_reads_unchanged() {
        let old = r#"{
  "version": 1,
  "generation": 3,
  "next_file": 7,
  "segments": [
    {
      "file": "00000005.seg",
      "rows": 10,
      "live": 9,
      "bytes": 1234,
      "crc32": 42,
      "key_xor": "00000000000000ff",
      "max_created_us": -5,
      "tombstones": "00000006.del"
    }
  ],
  "stamp": { "rows": 9, "max_created_us": -5, "key_xor": "00000000000000ff" },
  "store": { "db": { "size": 1, "mtime_ns": 1700000000123456789, "ino": 5 }, "wal": null }
}"#;
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join(MANIFEST), old).unwrap();
        let m = Manifest::read(tmp.path()).unwrap();
        assert_eq!(m.stamp.rows, 9);
        assert_eq!(m.segments[0].kind.rows, 10);
        assert_eq!(m.segments[0].kind.max_created_us, Some(-5));
        assert_eq!(m.segments[0].tombstones.as_deref(), Some("00000006.del"));
        assert_eq!(m.store.db.unwrap().mtime_ns, 1_700_000_000_123_456_789);
        let before: serde_json::Value = serde_json::from_str(old).unwrap();
        assert_eq!(serde_json::to_value(&m).unwrap(), before);
    }
}

/// Longest wait of [`wait_for_writer`] in a call: a writer that has begun closing
/// publishes well within it.
pub const PUBLISH_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// For a reader that found the index (or the embeddings) of the store at `db` stale:
/// when a writable session is closing — it holds `conversations.index/LOCK` and
/// `conversations.index/CLOSING` ([`closing`]) while it publishes the embeddings and
/// the index — waits up to `wait` for it to let go. A writer that holds only `LOCK` is
/// still importing (`skills serve`'s background import holds it for a whole run, many
/// files or a huge one): no wait then, the caller answers from DuckDB at once, exactly
/// (issue 43: calls waited the whole `wait` when earlier files of a run were stored).
/// True when a closing writer let go within `wait` (open again: the files are likely
/// current); false when none held the lock (the store was written by another tool, or
/// an ingest was killed), the writer is not closing, or it still holds it.
pub fn wait_for_writer(db: &Path, wait: std::time::Duration) -> bool {
    let dir = dir_of(db);
    let Ok(lock) = std::fs::File::open(dir.join(set::LOCK)) else {
        return false;
    };
    let start = std::time::Instant::now();
    let mut held = false;
    loop {
        match lock.try_lock_shared() {
            Ok(()) => {
                let _ = lock.unlock();
                return held;
            }
            Err(std::fs::TryLockError::WouldBlock)
                if start.elapsed() < wait && held_by_another(&dir.join(set::CLOSING)) =>
            {
                held = true;
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(_) => return false,
        }
    }
}

/// True when a writer holds the writer lock (`conversations.index/LOCK`) of the store
/// at `db`: every writer of the store takes it before opening the database (false
/// when no writer ever ran).
pub fn writer_holds_lock(db: &Path) -> bool {
    held_by_another(&dir_of(db).join(set::LOCK))
}

/// True when another open file description holds a lock on the file at `path` (false
/// when there is no such file).
fn held_by_another(path: &Path) -> bool {
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    match file.try_lock_shared() {
        Ok(()) => {
            let _ = file.unlock();
            false
        }
        Err(std::fs::TryLockError::WouldBlock) => true,
        Err(std::fs::TryLockError::Error(_)) => false,
    }
}

/// Takes `conversations.index/CLOSING` for a writable store about to close (bring the
/// index and the embeddings up to date, then publish): readers that find the index
/// stale wait for a closing writer only ([`wait_for_writer`]). Released when the file
/// is dropped; `None` when it cannot be taken (readers then do not wait: they answer
/// from DuckDB).
pub fn closing(db: &Path) -> Option<std::fs::File> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir_of(db).join(set::CLOSING))
        .ok()?;
    file.lock().ok()?;
    Some(file)
}

#[cfg(test)]
mod wait_tests {
    use super::*;
    use std::time::Duration;

    /// Issue 30: a reader waits for a closing writer holding `LOCK` to let go, not for
    /// a lock nobody holds, not past its wait, and (issue 43) not for a writer that is
    /// still importing.
    #[test]
    fn wait_for_writer_waits_only_for_a_writer_that_lets_go() {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("conversations.duckdb");
        // No index folder: nobody writes.
        assert!(!wait_for_writer(&db, Duration::from_millis(50)));
        let dir = dir_of(&db);
        std::fs::create_dir_all(&dir).unwrap();
        let lock = std::fs::File::create(dir.join("LOCK")).unwrap();
        // A LOCK file nobody holds.
        assert!(!wait_for_writer(&db, Duration::from_millis(50)));
        // Held past the wait, closing.
        lock.lock().unwrap();
        let held = closing(&db).unwrap();
        assert!(!wait_for_writer(&db, Duration::from_millis(50)));
        drop(held);
        // Held by a writer still importing (not closing): no wait at all (issue 43).
        let start = std::time::Instant::now();
        assert!(!wait_for_writer(&db, Duration::from_secs(5)));
        assert!(start.elapsed() < Duration::from_secs(1));
        // A closing writer that lets go within the wait.
        let closing = closing(&db).unwrap();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            lock.unlock().unwrap();
            drop(closing);
        });
        let start = std::time::Instant::now();
        assert!(wait_for_writer(&db, Duration::from_secs(5)));
        assert!(start.elapsed() >= Duration::from_millis(150));
        writer.join().unwrap();
    }
}
