//! The search index of the conversations store: `all_conversations` in
//! search-conversations' order (`created DESC, source, conversation_id, message_id`),
//! as immutable [`segment`](super::segment) files answered by memory-mapping.
//!
//! ## Where it lives and when it is trusted
//!
//! `conversations.index/` beside `conversations.duckdb` holds `MANIFEST` (JSON: the
//! segment files, their tombstone files, the stamp) and the files it names. Every
//! writable open of the store ([`ConversationStore::open_rw`](super::ConversationStore::open_rw))
//! takes `conversations.index/LOCK` until [`ConversationStore::close`](super::ConversationStore::close),
//! which brings the index up to date and publishes a new manifest: new files are
//! written under fresh names and fsynced, then `MANIFEST.tmp` is renamed over
//! `MANIFEST`. Readers see the old or the new set of files, never a mix.
//!
//! The manifest records the size, modification time and inode of the DuckDB file (and
//! its WAL) as they were after the writer closed the database. A reader trusts the
//! index only while those still match ([`Index::open`]): any later write to the
//! database — an ingest killed before it published, another tool — makes the index
//! stale, and the caller answers from DuckDB instead. The next writable open sees the
//! mismatch and its close rebuilds the index from the table. A reader that finds the
//! index stale while a writer still holds `LOCK` (an ingest about to publish, such as
//! `skills serve`'s background import) may wait for it ([`wait_for_writer`]): the
//! writer publishes the embeddings, then the index, then lets go of the lock.
//!
//! ## Incremental upkeep
//!
//! The store reports which conversations a session wrote (new rows, appended or
//! rewritten conversations). At close their rows already indexed are masked by
//! tombstones (a bit set per segment, in a new file), and all their current rows go
//! into one new segment. Segments are then merged by size tier: four or more segments
//! whose live row counts share a power-of-four tier become one, and a segment with
//! more masked than live rows is rewritten. Before publishing, the stamp's live row
//! count and newest `created` are compared with the table's; a mismatch rebuilds the
//! index from scratch. The stamp also holds the XOR of the live rows' key hashes,
//! which [`Stamp::of_table`] computes from the table for tests (reading every key).
//!
//! Kept in one file (1067 lines): the manifest protocol's two halves — publishing and the reader's freshness check — must be read together.

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use super::segment::{
    self, key_hash, order, RowIn, Segment, SegmentBuilder, HAS_QUESTION, NOT_INJECTED,
};
use crate::cancel::Cancel;
use crate::search::postings::{self, Stats};
use crate::search::scan::{self, Corrupt, Pattern};

/// Name of the manifest file inside the index folder.
pub const MANIFEST: &str = "MANIFEST";
/// Version of the manifest this code writes and reads.
pub const MANIFEST_VERSION: u32 = 1;
/// How long a writer waits for another writer's index lock.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(30);
/// Segments of one size tier merged together once there are this many.
const TIER_FANOUT: usize = 4;

/// The index folder of the store at `db` (`conversations.duckdb` → `conversations.index`).
pub fn dir_of(db: &Path) -> PathBuf {
    db.with_extension("index")
}

/// Why a reader cannot use the index (the caller then answers from DuckDB).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    /// No index was written yet (a store from before the index, or an in-memory one).
    #[error("no search index yet")]
    Missing,
    /// The database changed after the index was published.
    #[error("the search index is older than the store")]
    Stale,
    /// The index files are damaged or of another version.
    #[error("the search index is damaged ({0})")]
    Corrupt(String),
}

/// Errors bringing the index up to date.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// Reading the table failed.
    #[error("search index: {0}")]
    DuckDb(#[from] duckdb::Error),
    /// A segment could not be written or read.
    #[error(transparent)]
    Segment(#[from] segment::SegmentError),
    /// Filesystem error.
    #[error("search index `{path}`: {source}")]
    Io {
        /// File or folder.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The index disagrees with the table it was built from.
    #[error("search index: {0}")]
    Mismatch(String),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> IndexError + '_ {
    move |source| IndexError::Io {
        path: path.to_path_buf(),
        source,
    }
}

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

/// The DuckDB file and its WAL, as a reader must find them for the index to hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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

/// One segment in the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentEntry {
    /// File name inside the index folder.
    pub file: String,
    /// Rows in the file.
    pub rows: u64,
    /// Rows not masked by the tombstones.
    pub live: u64,
    /// File length.
    pub bytes: u64,
    /// CRC-32 of the file.
    pub crc32: u32,
    /// XOR of the live rows' key hashes (16 hex digits).
    pub key_xor: String,
    /// Newest `created` of a live row (µs), `None` when none is live.
    pub max_created_us: Option<i64>,
    /// Tombstone file (a bit set over the rows, little-endian `u64` words), if any.
    pub tombstones: Option<String>,
}

impl SegmentEntry {
    /// The entry of a segment just written as `file`: every row live, no tombstones.
    fn fresh(file: String, w: &segment::Written) -> Self {
        Self {
            file,
            rows: w.rows,
            live: w.rows,
            bytes: w.bytes,
            crc32: w.crc32,
            key_xor: format!("{:016x}", w.key_xor),
            max_created_us: (w.rows > 0).then_some(w.max_created_us),
            tombstones: None,
        }
    }
}

/// The manifest: which files make up the index and what they must match.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// [`MANIFEST_VERSION`].
    pub version: u32,
    /// Incremented by every publication.
    pub generation: u64,
    /// Next number for a new file name.
    pub next_file: u64,
    /// Segments, newest data first.
    pub segments: Vec<SegmentEntry>,
    /// The live rows' figures.
    pub stamp: Stamp,
    /// The DuckDB files the index was published against.
    pub store: StoreStamp,
}

impl Manifest {
    /// Reads the manifest of the index at `dir`.
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

/// A segment with its tombstones, ready to search.
#[derive(Debug)]
struct Live {
    seg: Segment,
    /// Masked rows (bit set), empty when none.
    dead: Vec<u64>,
}

impl Live {
    fn is_dead(&self, row: usize) -> bool {
        self.dead
            .get(row / 64)
            .is_some_and(|w| w & (1 << (row % 64)) != 0)
    }
}

pub(super) fn read_tombstones(path: &Path, rows: usize) -> Result<Vec<u64>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if bytes.len() != rows.div_ceil(64) * 8 {
        return Err(format!(
            "{}: {} bytes for {rows} rows",
            path.display(),
            bytes.len()
        ));
    }
    Ok(bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
        .collect())
}

/// What one search asks for.
#[derive(Debug, Clone, Copy)]
pub struct Query<'a> {
    /// `Some(term)`: `content ILIKE '%' || term || '%'`; `None`: the questions mode
    /// (`role = 'user' AND NOT is_injected AND has_question = 1`).
    pub term: Option<&'a str>,
    /// `role = ?` (ignored in the questions mode).
    pub role: Option<&'a str>,
    /// With `role = 'user'`, also `NOT is_injected`.
    pub exclude_injected: bool,
    /// Maximum rows.
    pub limit: usize,
    /// The call's stop signal: once stopped, the search returns early with fewer rows
    /// (the host then discards them).
    pub stop: &'a Cancel,
}

/// One row of a result, with the columns search-conversations shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    /// `created`, µs since the epoch.
    pub created_us: i64,
    /// `source`.
    pub source: String,
    /// `role`.
    pub role: String,
    /// `conversation_id`.
    pub conversation_id: String,
    /// `message_id`.
    pub message_id: String,
    /// First [`segment::PREVIEW_CHARS`] characters of `content`.
    pub preview: String,
}

/// An opened index: its segments, memory-mapped.
#[derive(Debug)]
pub struct Index {
    segments: Vec<Live>,
    manifest: Manifest,
}

impl Index {
    /// Opens the index of the store at `db` if it matches the store as it is now.
    /// Costs a manifest read, a few `stat`s and one `mmap` per segment; no row is read.
    ///
    /// # Errors
    /// [`Unavailable`] saying why the index cannot answer for this store.
    pub fn open(db: &Path) -> Result<Self, Unavailable> {
        let dir = dir_of(db);
        let manifest = Manifest::read(&dir)?;
        if StoreStamp::of(db) != manifest.store {
            return Err(Unavailable::Stale);
        }
        Self::open_files(&dir, manifest)
    }

    fn open_files(dir: &Path, manifest: Manifest) -> Result<Self, Unavailable> {
        let mut segments = Vec::with_capacity(manifest.segments.len());
        for e in &manifest.segments {
            let seg = Segment::open(&dir.join(&e.file))
                .map_err(|err| Unavailable::Corrupt(err.to_string()))?;
            if seg.len() as u64 != e.rows {
                return Err(Unavailable::Corrupt(format!(
                    "{}: row count differs from the manifest",
                    e.file
                )));
            }
            let dead = match &e.tombstones {
                Some(t) => {
                    read_tombstones(&dir.join(t), seg.len()).map_err(Unavailable::Corrupt)?
                }
                None => Vec::new(),
            };
            segments.push(Live { seg, dead });
        }
        Ok(Self { segments, manifest })
    }

    /// The manifest this index was opened from.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// Total live rows.
    pub fn rows(&self) -> u64 {
        self.manifest.stamp.rows
    }

    /// The first `q.limit` rows matching `q`, in search order — the rows DuckDB's
    /// `… ORDER BY created DESC, source, conversation_id, message_id LIMIT ?` returns.
    ///
    /// # Errors
    /// [`Corrupt`] when a segment is damaged.
    pub fn search(&self, q: &Query<'_>) -> Result<Vec<Hit>, Corrupt> {
        let pattern = q.term.map(Pattern::new);
        // (segment, row) candidates, kept sorted and cut to `limit`.
        let mut best: Vec<(usize, usize)> = Vec::new();
        for (si, live) in self.segments.iter().enumerate() {
            let seg = &live.seg;
            if seg.is_empty() || q.stop.is_stopped() {
                continue;
            }
            if best.len() >= q.limit {
                // Nothing in this segment can beat the current last row.
                let (ls, lr) = best[best.len() - 1];
                let worst = self.segments[ls].seg.key(lr)?;
                if order(worst, seg.key(0)?) == std::cmp::Ordering::Less {
                    continue;
                }
            }
            let rows = match &pattern {
                Some(p) => find_in(live, p, q)?,
                None => questions_in(live, q.limit)?,
            };
            if rows.is_empty() {
                continue;
            }
            best.extend(rows.into_iter().map(|r| (si, r)));
            let mut keyed = Vec::with_capacity(best.len());
            for &(s, r) in &best {
                keyed.push(((s, r), self.segments[s].seg.key(r)?));
            }
            keyed.sort_by(|a, b| order(a.1, b.1));
            keyed.truncate(q.limit);
            best = keyed.into_iter().map(|(sr, _)| sr).collect();
        }
        best.into_iter().map(|(s, r)| self.hit(s, r)).collect()
    }
}

/// What one keyword (BM25) search asks for: every filter applies before ranking, so
/// the answer is the best `limit` rows that pass them.
#[derive(Debug, Clone, Copy)]
pub struct KeywordQuery<'a> {
    /// Terms, already folded and chosen by [`crate::search::words::is_term`]; each is
    /// scored once.
    pub terms: &'a [String],
    /// `role = ?`.
    pub role: Option<&'a str>,
    /// With `role = 'user'`, also `NOT is_injected`.
    pub exclude_injected: bool,
    /// `source = ?`.
    pub source: Option<&'a str>,
    /// `conversation_id = ?`.
    pub conversation_id: Option<&'a str>,
    /// `created >= ?` (µs).
    pub since_us: Option<i64>,
    /// `created < ?` (µs).
    pub until_us: Option<i64>,
    /// Maximum rows.
    pub limit: usize,
    /// The call's stop signal: checked between segments.
    pub stop: &'a Cancel,
}

/// How [`Index::keyword_in_context`] scores a row with the messages around it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Neighbourhood {
    /// Messages on each side of a row (same conversation) that count with it.
    pub window: usize,
    /// How their words count ([`postings::Spread`]).
    pub spread: postings::Spread,
}

/// Rows looked at on each side of a row for its [`Neighbourhood`]: past this many rows
/// of other conversations (interleaved in time), a neighbour is not searched further.
pub const NEIGHBOUR_GAP: usize = 64;

/// One row found by [`Index::keyword_in_context`].
#[derive(Debug, Clone, PartialEq)]
pub struct KeywordHit {
    /// The ranking score: BM25 of the row with its neighbours (> 0).
    pub score: f64,
    /// The row's own BM25 (0 when only its neighbours hold the words).
    pub own: f64,
    /// The row.
    pub hit: Hit,
}

impl Index {
    /// True when every segment holds BM25 postings (version 2 files); an index with
    /// version 1 segments answers [`Index::keyword`] with `None` until the next ingest
    /// rewrites them.
    pub fn has_postings(&self) -> bool {
        self.segments.iter().all(|l| l.seg.postings().is_some())
    }

    /// The best `q.limit` live rows for `q.terms` by BM25 ([`postings`]): `(score,
    /// hit)`, best first, ties in search order (newest first). Statistics (`N`, `df`,
    /// mean length) are those of every segment, masked rows included until a merge
    /// drops them, as Lucene counts deleted documents. `None` when a segment has no
    /// postings ([`Index::has_postings`]).
    ///
    /// # Errors
    /// [`Corrupt`] when a segment is damaged.
    pub fn keyword(&self, q: &KeywordQuery<'_>) -> Result<Option<Vec<(f64, Hit)>>, Corrupt> {
        Ok(self
            .ranked(q, None)?
            .map(|hits| hits.into_iter().map(|k| (k.score, k.hit)).collect()))
    }

    /// As [`Index::keyword`], each row scored with the messages around it
    /// ([`Neighbourhood`]): up to `window` live, non-injected rows of the same
    /// conversation on each side, nearest in time first (rows are in time order inside
    /// a segment, and a conversation's live rows all sit in one segment). A message
    /// that holds none of the words but answers one that does ("Yes, twice last
    /// summer!") is found this way. Filters apply to the returned row, not to its
    /// neighbours.
    ///
    /// # Errors
    /// [`Corrupt`] when a segment is damaged.
    pub fn keyword_in_context(
        &self,
        q: &KeywordQuery<'_>,
        around: Neighbourhood,
    ) -> Result<Option<Vec<KeywordHit>>, Corrupt> {
        self.ranked(q, Some(around))
    }

    fn ranked(
        &self,
        q: &KeywordQuery<'_>,
        around: Option<Neighbourhood>,
    ) -> Result<Option<Vec<KeywordHit>>, Corrupt> {
        let mut all = Vec::with_capacity(self.segments.len());
        for live in &self.segments {
            match live.seg.postings() {
                Some(p) => all.push(p),
                None => return Ok(None),
            }
        }
        let stats = Stats {
            rows: all.iter().map(|p| p.rows() as u64).sum(),
            total_length: all.iter().map(|p| p.total_length).sum(),
        };
        let avg = stats.avg_length();
        // Each term's list in each segment (looked up once), then its idf over all.
        let mut lists: Vec<Vec<(postings::List<'_>, f64)>> = vec![Vec::new(); all.len()];
        for t in q.terms {
            let mut df = 0u64;
            let mut found = Vec::new();
            for (si, p) in all.iter().enumerate() {
                if let Some(l) = p.list(t)? {
                    df += u64::from(l.df);
                    found.push((si, l));
                }
            }
            let idf = postings::idf(stats.rows, df);
            for (si, l) in found {
                lists[si].push((l, idf));
            }
        }
        // (score, own score, segment, row), cut to `limit` after each segment.
        let mut best: Vec<(f64, f64, usize, usize)> = Vec::new();
        for (si, (live, p)) in self.segments.iter().zip(&all).enumerate() {
            if q.stop.is_stopped() {
                break;
            }
            if lists[si].is_empty() {
                continue;
            }
            let seg = &live.seg;
            let role = match q.role {
                Some(r) => match seg.role_id(r)? {
                    Some(id) => Some(id),
                    None => continue,
                },
                None => None,
            };
            let source = match q.source {
                Some(s) => match seg.source_id(s)? {
                    Some(id) => Some(id),
                    None => continue,
                },
                None => None,
            };
            let conversation = match q.conversation_id {
                Some(c) => match seg.conversation_id_of(c)? {
                    Some(id) => Some(id),
                    None => continue,
                },
                None => None,
            };
            let need_typed = q.exclude_injected && q.role == Some("user");
            let (roles, flags, sources, convs, created) = (
                seg.role_ids(),
                seg.flags(),
                seg.source_ids(),
                seg.conversation_ids(),
                seg.created(),
            );
            let accept = |row: usize| {
                !live.is_dead(row)
                    && role.is_none_or(|id| roles.get(row) == Some(&id))
                    && (!need_typed || flags.get(row).is_some_and(|f| f & NOT_INJECTED != 0))
                    && source.is_none_or(|id| sources.get(row) == Some(&id))
                    && conversation.is_none_or(|id| convs.get(row) == Some(&id))
                    && q.since_us
                        .is_none_or(|s| created.get(row).is_some_and(|&c| c >= s))
                    && q.until_us
                        .is_none_or(|u| created.get(row).is_some_and(|&c| c < u))
            };
            match around {
                None => {
                    let rows = postings::top_rows(p, &lists[si], avg, q.limit, accept)?;
                    best.extend(rows.into_iter().map(|(score, r)| (score, score, si, r)));
                }
                Some(n) => {
                    let neighbours = |row: usize, out: &mut Vec<usize>| {
                        let (Some(&c), Some(&s)) = (convs.get(row), sources.get(row)) else {
                            return;
                        };
                        for step in [1isize, -1] {
                            let (mut j, mut found) = (row, 0);
                            for _ in 0..NEIGHBOUR_GAP {
                                let Some(next) = j.checked_add_signed(step) else {
                                    break;
                                };
                                j = next;
                                if j >= convs.len() {
                                    break;
                                }
                                if convs[j] == c
                                    && sources.get(j) == Some(&s)
                                    && !live.is_dead(j)
                                    && flags.get(j).is_some_and(|f| f & NOT_INJECTED != 0)
                                {
                                    out.push(j);
                                    found += 1;
                                    if found == n.window {
                                        break;
                                    }
                                }
                            }
                        }
                    };
                    let rows = postings::top_rows_in_context(
                        p, &lists[si], avg, q.limit, n.spread, neighbours, accept,
                    )?;
                    best.extend(rows.into_iter().map(|c| (c.score, c.own, si, c.row)));
                }
            }
            let mut keyed = Vec::with_capacity(best.len());
            for &(score, own, s, r) in &best {
                keyed.push((score, (own, s, r), self.segments[s].seg.key(r)?));
            }
            keyed.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| order(a.2, b.2)));
            keyed.truncate(q.limit);
            best = keyed
                .into_iter()
                .map(|(score, (own, s, r), _)| (score, own, s, r))
                .collect();
        }
        best.into_iter()
            .map(|(score, own, s, r)| {
                Ok(KeywordHit {
                    score,
                    own,
                    hit: self.hit(s, r)?,
                })
            })
            .collect::<Result<Vec<_>, Corrupt>>()
            .map(Some)
    }

    fn hit(&self, s: usize, r: usize) -> Result<Hit, Corrupt> {
        let seg = &self.segments[s].seg;
        Ok(Hit {
            created_us: *seg.created().get(r).ok_or(Corrupt)?,
            source: seg.source(r)?.to_owned(),
            role: seg.role(r)?.to_owned(),
            conversation_id: seg.conversation_id(r)?.to_owned(),
            message_id: seg.message_id(r)?.to_owned(),
            preview: seg.preview(r)?,
        })
    }

    /// The live row with key (`created_us`, `source`, `conversation_id`,
    /// `message_id`), found by binary search in each segment (rows are in key order):
    /// its [`Hit`] and its folded text (`content` lowercased as DuckDB does).
    /// `None` when no live row has that key.
    ///
    /// # Errors
    /// [`Corrupt`] when a segment is damaged.
    pub fn lookup(
        &self,
        created_us: i64,
        source: &str,
        conversation_id: &str,
        message_id: &str,
    ) -> Result<Option<(Hit, String)>, Corrupt> {
        let key = (created_us, source, conversation_id, message_id);
        for live in &self.segments {
            let seg = &live.seg;
            let (mut lo, mut hi) = (0, seg.len());
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if order(seg.key(mid)?, key) == std::cmp::Ordering::Less {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            if lo < seg.len() && seg.key(lo)? == key && !live.is_dead(lo) {
                let text = String::from_utf8_lossy(seg.texts().row(lo)?).into_owned();
                let hit = Hit {
                    created_us,
                    source: source.to_owned(),
                    role: seg.role(lo)?.to_owned(),
                    conversation_id: conversation_id.to_owned(),
                    message_id: message_id.to_owned(),
                    preview: seg.preview(lo)?,
                };
                return Ok(Some((hit, text)));
            }
        }
        Ok(None)
    }
}

/// Rows of one segment matching an `ILIKE` query, in order, at most `q.limit`.
fn find_in(live: &Live, pattern: &Pattern, q: &Query<'_>) -> Result<Vec<usize>, Corrupt> {
    let seg = &live.seg;
    let role = match q.role {
        Some(r) => match seg.role_id(r)? {
            Some(id) => Some(id),
            None => return Ok(Vec::new()),
        },
        None => None,
    };
    let need_typed = q.exclude_injected && q.role == Some("user");
    let (roles, flags) = (seg.role_ids(), seg.flags());
    let mut accept = |row: usize| {
        !live.is_dead(row)
            && role.is_none_or(|id| roles.get(row) == Some(&id))
            && (!need_typed || flags.get(row).is_some_and(|f| f & NOT_INJECTED != 0))
    };
    if let Some(rows) = find_by_postings(live, pattern, &mut accept, q)? {
        return Ok(rows);
    }
    let mut out = Vec::new();
    let filter = seg.filter();
    scan::find(
        &seg.texts(),
        Some(&filter),
        pattern,
        &mut accept,
        q.limit,
        &mut out,
        q.stop,
    )?;
    Ok(out)
}

/// A whole word of the pattern ([`Pattern::whole_words`]) held by at most this share
/// of a segment's rows sends [`find_in`] to that word's postings instead of the scan:
/// each candidate row is then tested alone (~100–200 ns, a cache miss and a `memmem`),
/// which beats the block-filtered scan (~10 GB/s over the blocks it cannot skip) while
/// the word is rarer than this.
const POSTINGS_MAX_SHARE: usize = 16;

/// [`find_in`] through postings: the rows holding the pattern's rarest indexed whole
/// word, tested in order. Sound because every row the pattern matches holds each of
/// its whole words, and a segment's postings list every indexed word of every row
/// (`search::postings::build`). `Ok(None)` when the segment has no postings, the
/// pattern no indexed whole word, or its rarest one is too common to pay.
fn find_by_postings(
    live: &Live,
    pattern: &Pattern,
    accept: &mut dyn FnMut(usize) -> bool,
    q: &Query<'_>,
) -> Result<Option<Vec<usize>>, Corrupt> {
    let seg = &live.seg;
    let Some(p) = seg.postings() else {
        return Ok(None);
    };
    let mut rarest: Option<postings::List<'_>> = None;
    for word in pattern.whole_words() {
        if !crate::search::words::is_term(word) {
            continue;
        }
        match p.list(word)? {
            // No row holds a word every match must hold.
            None => return Ok(Some(Vec::new())),
            Some(l) if rarest.is_none_or(|r| l.df < r.df) => rarest = Some(l),
            Some(_) => {}
        }
    }
    let Some(list) = rarest.filter(|l| (l.df as usize) * POSTINGS_MAX_SHARE <= seg.len()) else {
        return Ok(None);
    };
    let texts = seg.texts();
    let mut out = Vec::new();
    let mut damaged = false;
    let mut tested = 0usize;
    list.rows_while(|row| {
        tested += 1;
        if tested.is_multiple_of(scan::STOP_CHECK_ROWS) && q.stop.is_stopped() {
            return false;
        }
        match texts.row(row) {
            Ok(text) => {
                if accept(row) && pattern.matches(text) {
                    out.push(row);
                }
            }
            Err(_) => damaged = true,
        }
        !damaged && out.len() < q.limit
    })?;
    if damaged {
        return Err(Corrupt);
    }
    Ok(Some(out))
}

/// Rows of one segment in the questions mode, in order, at most `limit`.
fn questions_in(live: &Live, limit: usize) -> Result<Vec<usize>, Corrupt> {
    let seg = &live.seg;
    let Some(user) = seg.role_id("user")? else {
        return Ok(Vec::new());
    };
    let want = HAS_QUESTION | NOT_INJECTED;
    let (roles, flags) = (seg.role_ids(), seg.flags());
    Ok((0..seg.len())
        .filter(|&r| {
            roles.get(r) == Some(&user)
                && flags.get(r).is_some_and(|f| f & want == want)
                && !live.is_dead(r)
        })
        .take(limit)
        .collect())
}

/// Longest wait of [`wait_for_writer`] in a call: a background import of a few appended
/// lines publishes well within it.
pub const PUBLISH_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// For a reader that found the index (or the embeddings) of the store at `db` stale:
/// when a writable session holds `conversations.index/LOCK` (an ingest that has not
/// published yet, e.g. `skills serve`'s background import), waits up to `wait` for it
/// to let go — it publishes the index and the embeddings first. True when a writer
/// held the lock and let go within `wait` (open again: the files are likely current);
/// false when none held it (the store was written by another tool, or an ingest was
/// killed) or it still holds it.
pub fn wait_for_writer(db: &Path, wait: std::time::Duration) -> bool {
    let Ok(lock) = std::fs::File::open(dir_of(db).join("LOCK")) else {
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
            Err(std::fs::TryLockError::WouldBlock) if start.elapsed() < wait => {
                held = true;
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(_) => return false,
        }
    }
}

/// Opened indexes kept across calls of a long-running process (`skills serve`):
/// reopened only when the manifest or the store's files changed.
#[derive(Debug, Default)]
pub struct Cache {
    held: Mutex<Option<(CacheKey, Arc<Index>)>>,
}

type CacheKey = (PathBuf, Option<FileStamp>, StoreStamp);

impl Cache {
    /// The index of the store at `db`, as [`Index::open`] gives it.
    ///
    /// # Errors
    /// [`Unavailable`].
    pub fn get(&self, db: &Path) -> Result<Arc<Index>, Unavailable> {
        let key = (
            db.to_path_buf(),
            FileStamp::of(&dir_of(db).join(MANIFEST)),
            StoreStamp::of(db),
        );
        let mut held = self
            .held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((k, index)) = held.as_ref() {
            if *k == key {
                return Ok(index.clone());
            }
        }
        *held = None;
        let index = Arc::new(Index::open(db)?);
        *held = Some((key, index.clone()));
        Ok(index)
    }
}

/// The conversations one writable session changed, as (`source`, `conversation_id`).
pub type Touched = HashSet<(String, String)>;

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

/// The writer side, held by a writable store from open to close.
#[derive(Debug)]
pub struct Writer {
    dir: PathBuf,
    db: PathBuf,
    _lock: std::fs::File,
    /// The manifest when the store was opened, if it matched the store then.
    base: Option<Manifest>,
    /// Why `base` is `None`.
    base_reason: Option<String>,
}

const ROW_SQL: &str = "SELECT epoch_us(created), source, conversation_id, message_id, role, \
     (has_question = 1) AS q, (is_injected IS FALSE) AS typed, content FROM all_conversations";
const ROW_ORDER: &str = " ORDER BY created DESC, source ASC, conversation_id ASC, message_id ASC";

impl Writer {
    /// Takes the index lock of the store at `db` (waiting for another writer to
    /// publish) and reads the current manifest — call before opening the database,
    /// so the stamp is compared with the database as the last writer left it.
    ///
    /// # Errors
    /// [`IndexError::Io`] when the folder or the lock cannot be created.
    pub fn begin(db: &Path) -> Result<Self, IndexError> {
        let dir = dir_of(db);
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        let lock_path = dir.join("LOCK");
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io(&lock_path))?;
        // Another writer holds it while it ingests: wait as long as for DuckDB's lock.
        let start = std::time::Instant::now();
        loop {
            match lock.try_lock() {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) if start.elapsed() < LOCK_WAIT => {
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                Err(std::fs::TryLockError::WouldBlock) => {
                    return Err(IndexError::Io {
                        path: lock_path,
                        source: std::io::Error::new(
                            std::io::ErrorKind::WouldBlock,
                            format!(
                            "held by another process for {} s (a `skills ingest` still running?)",
                            LOCK_WAIT.as_secs()
                        ),
                        ),
                    })
                }
                Err(std::fs::TryLockError::Error(e)) => return Err(io(&lock_path)(e)),
            }
        }
        let (base, base_reason) = match Manifest::read(&dir) {
            Ok(m) if m.store == StoreStamp::of(db) => (Some(m), None),
            Ok(_) => (None, Some(Unavailable::Stale.to_string())),
            Err(e) => (None, Some(e.to_string())),
        };
        Ok(Self {
            dir,
            db: db.to_path_buf(),
            _lock: lock,
            base,
            base_reason,
        })
    }

    /// Brings the index up to date with the table through `conn`, given the
    /// conversations this session changed; returns the manifest to publish once the
    /// database is closed ([`Writer::publish`]).
    ///
    /// # Errors
    /// [`IndexError`] when the table cannot be read or a file cannot be written.
    pub fn update(
        &self,
        conn: &duckdb::Connection,
        touched: &Touched,
    ) -> Result<(Manifest, UpdateReport), IndexError> {
        let Some(base) = &self.base else {
            return self.rebuild(conn, self.base_reason.clone());
        };
        match self.incremental(conn, base.clone(), touched) {
            Ok((manifest, report)) => {
                let (rows, newest) = table_figures(conn)?;
                if rows == manifest.stamp.rows && newest == manifest.stamp.max_created_us {
                    return Ok((manifest, report));
                }
                let why = format!(
                    "after the update the index held {} rows, the table {rows}",
                    manifest.stamp.rows
                );
                self.rebuild(conn, Some(why))
            }
            Err(IndexError::DuckDb(e)) => Err(IndexError::DuckDb(e)),
            Err(e) => self.rebuild(conn, Some(e.to_string())),
        }
    }

    /// Builds the index from the whole table.
    fn rebuild(
        &self,
        conn: &duckdb::Connection,
        why: Option<String>,
    ) -> Result<(Manifest, UpdateReport), IndexError> {
        let next = self.base.as_ref().map_or(1, |m| m.next_file);
        let mut next = first_free(&self.dir, next);
        let file = next_name(&mut next, "seg");
        let written = build_from_table(conn, None, &self.dir.join(&file))?;
        let entry = SegmentEntry::fresh(file, &written);
        let segments = if written.rows > 0 {
            vec![entry]
        } else {
            Vec::new()
        };
        let manifest = self.manifest(next, segments);
        let (rows, newest) = table_figures(conn)?;
        if rows != manifest.stamp.rows || newest != manifest.stamp.max_created_us {
            return Err(IndexError::Mismatch(format!(
                "built {} rows, the table has {rows} (written while building?)",
                manifest.stamp.rows
            )));
        }
        let report = UpdateReport {
            rebuilt: true,
            reason: why,
            rows_written: written.rows,
            segments: manifest.segments.len(),
            rows: manifest.stamp.rows,
            bytes: manifest.segments.iter().map(|s| s.bytes).sum(),
        };
        Ok((manifest, report))
    }

    fn manifest(&self, next_file: u64, mut segments: Vec<SegmentEntry>) -> Manifest {
        segments.sort_by(|a, b| {
            b.max_created_us
                .cmp(&a.max_created_us)
                .then_with(|| a.file.cmp(&b.file))
        });
        let rows = segments.iter().map(|s| s.live).sum();
        let max_created_us = segments.iter().filter_map(|s| s.max_created_us).max();
        let key_xor = segments
            .iter()
            .map(|s| u64::from_str_radix(&s.key_xor, 16).unwrap_or(0))
            .fold(0, |a, b| a ^ b);
        Manifest {
            version: MANIFEST_VERSION,
            generation: self.base.as_ref().map_or(1, |m| m.generation + 1),
            next_file,
            segments,
            stamp: Stamp {
                rows,
                max_created_us,
                key_xor: format!("{key_xor:016x}"),
            },
            store: StoreStamp {
                db: None,
                wal: None,
            },
        }
    }

    /// New segment for the touched conversations, tombstones for their old rows,
    /// then merges by size tier.
    fn incremental(
        &self,
        conn: &duckdb::Connection,
        base: Manifest,
        touched: &Touched,
    ) -> Result<(Manifest, UpdateReport), IndexError> {
        let mut next = first_free(&self.dir, base.next_file);
        let mut entries: Vec<SegmentEntry> = Vec::new();
        let mut rows_written = 0;
        // Mask the touched conversations' rows in the segments that hold them.
        for e in base.segments {
            let mut e = e;
            if !touched.is_empty() {
                let seg = Segment::open(&self.dir.join(&e.file))?;
                let mut dead = match &e.tombstones {
                    Some(t) => read_tombstones(&self.dir.join(t), seg.len())
                        .map_err(IndexError::Mismatch)?,
                    None => vec![0u64; seg.len().div_ceil(64)],
                };
                let masked = mask(&seg, touched, &mut dead)?;
                if masked.rows > 0 {
                    let name = next_name(&mut next, "del");
                    write_synced(&self.dir.join(&name), bytemuck::cast_slice(&dead))?;
                    e.tombstones = Some(name);
                    e.live -= masked.rows;
                    let xor = u64::from_str_radix(&e.key_xor, 16).unwrap_or(0) ^ masked.key_xor;
                    e.key_xor = format!("{xor:016x}");
                    e.max_created_us = first_live_created(&seg, &dead);
                }
            }
            if e.live > 0 {
                entries.push(e);
            }
        }
        if !touched.is_empty() {
            let file = next_name(&mut next, "seg");
            let written = build_from_table(conn, Some(touched), &self.dir.join(&file))?;
            rows_written += written.rows;
            if written.rows > 0 {
                entries.push(SegmentEntry::fresh(file, &written));
            }
        }
        rows_written += self.merge_tiers(&mut entries, &mut next)?;
        let manifest = self.manifest(next, entries);
        let report = UpdateReport {
            rebuilt: false,
            reason: None,
            rows_written,
            segments: manifest.segments.len(),
            rows: manifest.stamp.rows,
            bytes: manifest.segments.iter().map(|s| s.bytes).sum(),
        };
        Ok((manifest, report))
    }

    /// Merges segments of one size tier once there are [`TIER_FANOUT`] of them, and
    /// rewrites segments with more masked than live rows. Returns rows written.
    fn merge_tiers(
        &self,
        entries: &mut Vec<SegmentEntry>,
        next: &mut u64,
    ) -> Result<u64, IndexError> {
        let tier = |live: u64| (64 - live.max(1).leading_zeros()) / 2;
        let mut written_rows = 0;
        loop {
            let mut group: Vec<usize> = Vec::new();
            let mut tiers: std::collections::BTreeMap<u32, Vec<usize>> =
                std::collections::BTreeMap::new();
            for (i, e) in entries.iter().enumerate() {
                tiers.entry(tier(e.live)).or_default().push(i);
            }
            if let Some((_, g)) = tiers.into_iter().find(|(_, g)| g.len() >= TIER_FANOUT) {
                group = g;
            } else if let Some(i) = entries.iter().position(|e| e.live * 2 < e.rows) {
                group.push(i);
            } else if let Some(i) = self.first_without_postings(entries) {
                // Written by an older version: rewritten once to gain its postings.
                group.push(i);
            }
            if group.is_empty() {
                return Ok(written_rows);
            }
            let parts: Vec<SegmentEntry> = group.iter().rev().map(|&i| entries.remove(i)).collect();
            let file = next_name(next, "seg");
            let merged = merge(&self.dir, &parts, &self.dir.join(&file))?;
            written_rows += merged.rows;
            if merged.rows > 0 {
                entries.push(SegmentEntry::fresh(file, &merged));
            }
        }
    }

    /// The first entry whose segment file is of format version 1 (no postings).
    fn first_without_postings(&self, entries: &[SegmentEntry]) -> Option<usize> {
        entries.iter().position(|e| {
            Segment::open(&self.dir.join(&e.file)).is_ok_and(|s| s.version() < segment::VERSION)
        })
    }

    /// Publishes `manifest` against the database as it is now (call after the
    /// database was checkpointed and closed), then removes files no manifest names.
    ///
    /// # Errors
    /// [`IndexError::Io`].
    pub fn publish(self, mut manifest: Manifest) -> Result<(), IndexError> {
        manifest.store = StoreStamp::of(&self.db);
        let tmp = self.dir.join("MANIFEST.tmp");
        let json = serde_json::to_vec_pretty(&manifest).unwrap_or_default();
        write_synced(&tmp, &json)?;
        let dest = self.dir.join(MANIFEST);
        std::fs::rename(&tmp, &dest).map_err(io(&dest))?;
        sync_dir(&self.dir)?;
        let keep: HashSet<&str> = manifest
            .segments
            .iter()
            .flat_map(|s| std::iter::once(s.file.as_str()).chain(s.tombstones.as_deref()))
            .chain([MANIFEST, "LOCK"])
            .collect();
        if let Ok(files) = std::fs::read_dir(&self.dir) {
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
/// maps is never truncated. Shared by the search index and the L1 embeddings.
pub(super) fn first_free(dir: &Path, next: u64) -> u64 {
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
pub(super) fn next_name(next: &mut u64, ext: &str) -> String {
    let name = format!("{:08}.{ext}", *next);
    *next += 1;
    name
}

pub(super) fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), IndexError> {
    let mut f = std::fs::File::create(path).map_err(io(path))?;
    f.write_all(bytes).map_err(io(path))?;
    f.sync_all().map_err(io(path))
}

pub(super) fn sync_dir(dir: &Path) -> Result<(), IndexError> {
    #[cfg(unix)]
    {
        let d = std::fs::File::open(dir).map_err(io(dir))?;
        d.sync_all().map_err(io(dir))?;
    }
    Ok(())
}

/// Rows masked by [`mask`] and the XOR of their key hashes.
struct Masked {
    rows: u64,
    key_xor: u64,
}

/// Sets the tombstone bits of the rows of `seg` that belong to `touched`
/// conversations and are not masked yet.
fn mask(seg: &Segment, touched: &Touched, dead: &mut [u64]) -> Result<Masked, IndexError> {
    let corrupt = |_| IndexError::Mismatch(format!("{} is damaged", seg.path()));
    let mut wanted: HashSet<(u16, u32)> = HashSet::new();
    for (source, conv) in touched {
        if let (Some(s), Some(c)) = (
            seg.source_id(source).map_err(corrupt)?,
            seg.conversation_id_of(conv).map_err(corrupt)?,
        ) {
            wanted.insert((s, c));
        }
    }
    let mut out = Masked {
        rows: 0,
        key_xor: 0,
    };
    if wanted.is_empty() {
        return Ok(out);
    }
    let (sources, convs) = (seg.source_ids(), seg.conversation_ids());
    for row in 0..seg.len() {
        let (Some(&s), Some(&c)) = (sources.get(row), convs.get(row)) else {
            return Err(corrupt(Corrupt));
        };
        let (w, bit) = (row / 64, 1u64 << (row % 64));
        if dead[w] & bit == 0 && wanted.contains(&(s, c)) {
            dead[w] |= bit;
            out.rows += 1;
            let (_, source, conv, msg) = seg.key(row).map_err(corrupt)?;
            out.key_xor ^= key_hash(source, conv, msg);
        }
    }
    Ok(out)
}

fn first_live_created(seg: &Segment, dead: &[u64]) -> Option<i64> {
    (0..seg.len())
        .find(|&r| dead.get(r / 64).is_none_or(|w| w & (1 << (r % 64)) == 0))
        .and_then(|r| seg.created().get(r).copied())
}

/// Row count and newest `created` (µs) of the table: one aggregate, checked at every
/// close.
fn table_figures(conn: &duckdb::Connection) -> Result<(u64, Option<i64>), IndexError> {
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
    /// The DuckDB error of the scan.
    pub fn of_table(conn: &duckdb::Connection) -> Result<Self, IndexError> {
        table_stamp(conn)
    }
}

fn table_stamp(conn: &duckdb::Connection) -> Result<Stamp, IndexError> {
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

pub(super) fn str_ref<'r>(row: &'r duckdb::Row<'_>, i: usize) -> Result<&'r str, duckdb::Error> {
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
pub(super) fn touched_rows(
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

/// Writes the rows of the table (of the `only` conversations, when given) as a
/// segment at `path`.
fn build_from_table(
    conn: &duckdb::Connection,
    only: Option<&Touched>,
    path: &Path,
) -> Result<segment::Written, IndexError> {
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
                return Err(IndexError::Mismatch(format!(
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

/// Merges the live rows of `parts` (segment files in `dir`) into one segment at `path`.
fn merge(dir: &Path, parts: &[SegmentEntry], path: &Path) -> Result<segment::Written, IndexError> {
    let mut lives = Vec::with_capacity(parts.len());
    for e in parts {
        let seg = Segment::open(&dir.join(&e.file))?;
        let dead = match &e.tombstones {
            Some(t) => read_tombstones(&dir.join(t), seg.len()).map_err(IndexError::Mismatch)?,
            None => Vec::new(),
        };
        lives.push(Live { seg, dead });
    }
    let corrupt = |_| {
        IndexError::Mismatch(format!(
            "a segment merged into {} is damaged",
            path.display()
        ))
    };
    let mut cursor = vec![0usize; lives.len()];
    let mut builder = SegmentBuilder::new();
    loop {
        let mut pick: Option<usize> = None;
        for (i, live) in lives.iter().enumerate() {
            while cursor[i] < live.seg.len() && live.is_dead(cursor[i]) {
                cursor[i] += 1;
            }
            if cursor[i] >= live.seg.len() {
                continue;
            }
            pick = match pick {
                None => Some(i),
                Some(p) => {
                    let a = lives[p].seg.key(cursor[p]).map_err(corrupt)?;
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
        builder.push(&lives[p].seg.row(cursor[p]).map_err(corrupt)?)?;
        cursor[p] += 1;
    }
    Ok(builder.write(path)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Issue 30: a reader waits for a writer holding `LOCK` to let go, not for a lock
    /// nobody holds, and not past its wait.
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
        // Held past the wait.
        lock.lock().unwrap();
        assert!(!wait_for_writer(&db, Duration::from_millis(50)));
        // Let go within the wait.
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            lock.unlock().unwrap();
        });
        let start = std::time::Instant::now();
        assert!(wait_for_writer(&db, Duration::from_secs(5)));
        assert!(start.elapsed() >= Duration::from_millis(150));
        writer.join().unwrap();
    }
}
