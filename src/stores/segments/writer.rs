//! The writer side of a segment set: the lock, the manifest a writable open found,
//! and the update — tombstones, the new segment, tier merges, rebuilds.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{dir_of, first_free, io, next_name, write_synced, EntryFields, Live, ManifestOf};
use super::{Manifest, Progress, SegmentEntry, SegmentKind, SetError, StoreStamp, Touched};
use super::{Unavailable, MANIFEST_VERSION};

/// Name of the writer lock file, in the search index's folder.
pub const LOCK: &str = "LOCK";
/// Lock file a writer holds (beside [`LOCK`]) only while it closes: brings its set up to
/// date and publishes. A reader that finds [`LOCK`] held but not this one knows the
/// writer is still importing, and does not wait for it.
pub const CLOSING: &str = "CLOSING";
/// How long a writer waits for another writer's lock.
pub const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(30);
/// Segments of one size tier merged together once there are this many; a segment's
/// tier is ⌊log₄ live rows⌋.
pub const TIER_FANOUT: usize = 4;

/// The manifest of a set as a writable open found it, read before the database was
/// opened (so its stamp is compared with the database as the last writer left it):
/// the manifest, or why an update must rebuild the set.
pub struct Base<K: SegmentKind>(Result<ManifestOf<K>, String>);

impl<K: SegmentKind> Clone for Base<K> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<K: SegmentKind> std::fmt::Debug for Base<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Base").field(&self.0).finish()
    }
}

impl<K: SegmentKind> Base<K> {
    /// Reads the manifest of the set of the store at `db` and checks it against the
    /// store.
    pub fn read(db: &Path) -> Self {
        Self(
            match Manifest::<_, _>::read(&dir_of::<K>(db)) as Result<ManifestOf<K>, _> {
                Ok(m) if !m.holds_for(db) => Err(K::STALE.to_owned()),
                // Every byte checked: a damaged segment kept by an incremental update would
                // lose its rows from every search until the next rebuild.
                // The writer holds the lock, so no file is replaced meanwhile.
                Ok(m) => {
                    let crc = super::writers_check_crc(&m);
                    match super::verify_files::<K>(&dir_of::<K>(db), &m, crc) {
                        Ok(()) => Ok(m),
                        Err(why) => Err(format!("damaged {} ({why})", K::NAME)),
                    }
                }
                Err(Unavailable::Missing) => Err(K::MISSING.to_owned()),
                // The kind's name, not `Unavailable`'s wording (which names the search index).
                Err(Unavailable::Corrupt(why)) => Err(format!("damaged {} ({why})", K::NAME)),
                Err(e) => Err(e.to_string()),
            },
        )
    }
}

/// What [`Writer::update`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Update {
    /// True when the set was built from the whole table.
    pub rebuilt: bool,
    /// Why it was rebuilt, when it was.
    pub reason: Option<String>,
    /// Rows written into new segments (including merges).
    pub written: u64,
    /// Segments after the update.
    pub segments: usize,
    /// Live rows after the update.
    pub live: u64,
    /// Bytes of all segment files.
    pub bytes: u64,
}

/// The writer of a set, held by a writable store from open to close.
pub struct Writer<K: SegmentKind> {
    dir: PathBuf,
    db: PathBuf,
    _lock: Option<std::fs::File>,
    base: Base<K>,
}

impl<K: SegmentKind> std::fmt::Debug for Writer<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("kind", &K::NAME)
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl<K: SegmentKind> Writer<K> {
    /// Takes the writer lock in the set's folder (waiting up to [`LOCK_WAIT`] for
    /// another writer to publish) and reads the current manifest — call before
    /// opening the database, so the stamp is compared with the database as the last
    /// writer left it.
    ///
    /// # Errors
    /// [`SetError::Io`] when the folder or the lock cannot be created, or the lock
    /// stays held.
    pub fn begin_locked(db: &Path) -> Result<Self, SetError> {
        let dir = dir_of::<K>(db);
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        let lock = lock(&dir.join(LOCK))?;
        Ok(Self {
            dir,
            db: db.to_path_buf(),
            _lock: Some(lock),
            base: Base::read(db),
        })
    }

    /// A writer over the manifest `base` found, under another set's lock.
    ///
    /// # Errors
    /// [`SetError::Io`] when the folder cannot be created.
    pub fn begin(db: &Path, base: Base<K>) -> Result<Self, SetError> {
        let dir = dir_of::<K>(db);
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        Ok(Self {
            dir,
            db: db.to_path_buf(),
            _lock: None,
            base,
        })
    }

    /// The set's folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Brings the set up to date with the table through `conn`, given the
    /// conversations this session changed; returns the manifest to publish once the
    /// database is closed ([`Writer::publish`]).
    ///
    /// # Errors
    /// [`SetError::DuckDb`] when the table cannot be read; any [`SetError`] of a
    /// rebuild (an incremental update that fails is followed by a rebuild).
    pub fn update(
        &self,
        kind: &mut K,
        conn: &duckdb::Connection,
        touched: &Touched,
        progress: Progress<'_>,
    ) -> Result<(ManifestOf<K>, Update), SetError> {
        let base = match &self.base.0 {
            Ok(m) => match kind.accepts(&m.kind) {
                Ok(()) => m,
                Err(why) => return self.rebuild(kind, conn, None, why, progress),
            },
            Err(why) => return self.rebuild(kind, conn, None, why.clone(), progress),
        };
        match self.incremental(kind, conn, base, touched, progress) {
            Ok((manifest, update)) => match kind.check(conn, &manifest.kind)? {
                None => Ok((manifest, update)),
                Some(c) => {
                    let why = format!(
                        "after the update the {} held {} rows, the table {}",
                        K::NAME,
                        c.held,
                        c.table
                    );
                    self.rebuild(kind, conn, Some(base), why, progress)
                }
            },
            Err(SetError::DuckDb(e)) => Err(SetError::DuckDb(e)),
            Err(e) => self.rebuild(kind, conn, Some(base), e.to_string(), progress),
        }
    }

    /// Builds the set from the whole table, as the next generation of `base` (the
    /// first when `None`).
    fn rebuild(
        &self,
        kind: &mut K,
        conn: &duckdb::Connection,
        base: Option<&ManifestOf<K>>,
        why: String,
        progress: Progress<'_>,
    ) -> Result<(ManifestOf<K>, Update), SetError> {
        let mut next = first_free(&self.dir, base.map_or(1, |m| m.next_file));
        let file = next_name(&mut next, K::FILE_EXT);
        let written = kind.build(conn, None, &self.dir.join(&file), progress)?;
        let rows = written.entry.rows();
        let segments = if rows > 0 {
            vec![SegmentEntry::fresh(file, written)]
        } else {
            Vec::new()
        };
        let manifest = self.manifest(kind, base, next, segments);
        if let Some(c) = kind.check(conn, &manifest.kind)? {
            return Err(SetError::Mismatch(format!(
                "built {} rows, the table has {} (written while building?)",
                c.held, c.table
            )));
        }
        let update = report(&manifest, true, Some(why), rows);
        Ok((manifest, update))
    }

    /// The manifest of `segments` (put in the kind's order), next after `base`.
    fn manifest(
        &self,
        kind: &K,
        base: Option<&ManifestOf<K>>,
        next_file: u64,
        mut segments: Vec<SegmentEntry<K::Entry>>,
    ) -> ManifestOf<K> {
        K::order(&mut segments);
        Manifest {
            version: MANIFEST_VERSION,
            generation: base.map_or(1, |m| m.generation + 1),
            next_file,
            kind: kind.meta(&segments),
            segments,
            store: StoreStamp::default(),
            content: None,
        }
    }

    /// Tombstones for the touched conversations' rows already in the set, a new
    /// segment for all their rows, then merges by size tier.
    fn incremental(
        &self,
        kind: &mut K,
        conn: &duckdb::Connection,
        base: &ManifestOf<K>,
        touched: &Touched,
        progress: Progress<'_>,
    ) -> Result<(ManifestOf<K>, Update), SetError> {
        let mut next = first_free(&self.dir, base.next_file);
        let mut entries = Vec::with_capacity(base.segments.len() + 1);
        let mut written = 0;
        for e in &base.segments {
            let mut e = e.clone();
            if !touched.is_empty() {
                let Live { seg, mut dead } =
                    Live::open::<K>(&self.dir, &e, &base.kind).map_err(SetError::Mismatch)?;
                dead.cover(K::rows(&seg));
                let masked = kind.mask(&seg, touched, &mut dead, &mut e.kind)?;
                if masked > 0 {
                    let name = next_name(&mut next, "del");
                    write_synced(&self.dir.join(&name), bytemuck::cast_slice(dead.words()))?;
                    e.tombstones = Some(name);
                    e.live -= masked;
                }
            }
            if e.live > 0 {
                entries.push(e);
            }
        }
        if !touched.is_empty() {
            let file = next_name(&mut next, K::FILE_EXT);
            let w = kind.build(conn, Some(touched), &self.dir.join(&file), progress)?;
            written += w.entry.rows();
            if w.entry.rows() > 0 {
                entries.push(SegmentEntry::fresh(file, w));
            }
        }
        written += self.merge_tiers(kind, &base.kind, &mut entries, &mut next)?;
        let manifest = self.manifest(kind, Some(base), next, entries);
        let update = report(&manifest, false, None, written);
        Ok((manifest, update))
    }

    /// Merges segments of one size tier once there are [`TIER_FANOUT`] of them, and
    /// rewrites a segment with more masked than live rows or of an older format, one
    /// group at a time until none is left. Returns rows written.
    fn merge_tiers(
        &self,
        kind: &mut K,
        meta: &K::Meta,
        entries: &mut Vec<SegmentEntry<K::Entry>>,
        next: &mut u64,
    ) -> Result<u64, SetError> {
        let tier = |live: u64| (64 - live.max(1).leading_zeros()) / 2;
        let mut written = 0;
        loop {
            let mut tiers: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
            for (i, e) in entries.iter().enumerate() {
                tiers.entry(tier(e.live)).or_default().push(i);
            }
            let group =
                if let Some((_, g)) = tiers.into_iter().find(|(_, g)| g.len() >= TIER_FANOUT) {
                    g
                } else if let Some(i) = entries.iter().position(|e| e.live * 2 < e.kind.rows()) {
                    vec![i]
                } else if let Some(i) = entries
                    .iter()
                    .position(|e| K::outdated(&self.dir.join(&e.file)))
                {
                    vec![i]
                } else {
                    return Ok(written);
                };
            let mut parts: Vec<SegmentEntry<K::Entry>> =
                group.iter().rev().map(|&i| entries.remove(i)).collect();
            parts.reverse();
            let lives = parts
                .iter()
                .map(|e| Live::open::<K>(&self.dir, e, meta).map_err(SetError::Mismatch))
                .collect::<Result<Vec<_>, _>>()?;
            let file = next_name(next, K::FILE_EXT);
            let merged = kind.merge(&lives, &self.dir.join(&file))?;
            written += merged.entry.rows();
            if merged.entry.rows() > 0 {
                entries.push(SegmentEntry::fresh(file, merged));
            }
        }
    }

    /// Publishes `manifest` against the database as it is now (call after the
    /// database was checkpointed and closed), then removes files no manifest names
    /// ([`Manifest::publish`], with the store's identity `store_id`); releases the lock.
    ///
    /// # Errors
    /// [`SetError::Io`].
    pub fn publish(
        self,
        manifest: ManifestOf<K>,
        store_id: Option<String>,
    ) -> Result<(), SetError> {
        manifest.publish(&self.dir, &self.db, store_id)
    }
}

fn report<M, E: EntryFields>(
    manifest: &Manifest<M, E>,
    rebuilt: bool,
    reason: Option<String>,
    written: u64,
) -> Update {
    Update {
        rebuilt,
        reason,
        written,
        segments: manifest.segments.len(),
        live: manifest.segments.iter().map(|s| s.live).sum(),
        bytes: manifest.segments.iter().map(|s| s.bytes).sum(),
    }
}

/// Opens (creating) the lock file at `path` and takes its exclusive lock, waiting up
/// to [`LOCK_WAIT`] while another process holds it.
fn lock(path: &Path) -> Result<std::fs::File, SetError> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(io(path))?;
    // Another writer holds it while it ingests: wait as long as for DuckDB's lock.
    let start = std::time::Instant::now();
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(std::fs::TryLockError::WouldBlock) if start.elapsed() < LOCK_WAIT => {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(SetError::Io {
                    path: path.to_path_buf(),
                    source: std::io::Error::new(
                        std::io::ErrorKind::WouldBlock,
                        format!(
                            "held by another process for {} s (a `skills ingest` still running?)",
                            LOCK_WAIT.as_secs()
                        ),
                    ),
                })
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io(path)(e)),
        }
    }
}
