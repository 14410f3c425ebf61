//! The reader side of a segment set: tombstones, an opened set, and the cache a
//! long-running process keeps them in.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::{dir_of, EntryFields, FileStamp, ManifestOf, SegmentEntry, SegmentKind};
use super::{StoreStamp, Unavailable, MANIFEST};

/// The masked rows of one segment: a bit set over its rows (bit `r % 64` of word
/// `r / 64`), empty when none is masked. On disk: the words, little-endian.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tombstones(Vec<u64>);

impl Tombstones {
    /// Reads the tombstone file at `path` of a segment of `rows` rows.
    ///
    /// # Errors
    /// What is wrong (unreadable, or not `⌈rows / 64⌉ · 8` bytes), naming the file.
    pub fn read(path: &Path, rows: usize) -> Result<Self, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        if bytes.len() != rows.div_ceil(64) * 8 {
            return Err(format!(
                "{}: {} bytes for {rows} rows",
                path.display(),
                bytes.len()
            ));
        }
        Ok(Self(
            bytes
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                .collect(),
        ))
    }

    /// Tombstones from their words (as [`Tombstones::words`] gives them).
    pub fn from_words(words: Vec<u64>) -> Self {
        Self(words)
    }

    /// True when row `row` is masked.
    pub fn is_dead(&self, row: usize) -> bool {
        self.0
            .get(row / 64)
            .is_some_and(|w| w & (1 << (row % 64)) != 0)
    }

    /// Masks row `row` (which must be below the rows given to [`Tombstones::cover`]);
    /// false when it was masked already.
    pub fn kill(&mut self, row: usize) -> bool {
        let (w, bit) = (row / 64, 1u64 << (row % 64));
        match self.0.get_mut(w) {
            Some(word) if *word & bit == 0 => {
                *word |= bit;
                true
            }
            _ => false,
        }
    }

    /// Makes the bit set as long as a segment of `rows` rows (to mask rows, and as it
    /// is written).
    pub fn cover(&mut self, rows: usize) {
        self.0.resize(rows.div_ceil(64), 0);
    }

    /// The words, as written to a tombstone file.
    pub fn words(&self) -> &[u64] {
        &self.0
    }
}

/// A segment with its tombstones.
#[derive(Debug)]
pub struct Live<S> {
    /// The opened segment file.
    pub seg: S,
    /// Its masked rows.
    pub dead: Tombstones,
}

impl<S> Live<S> {
    /// True when row `row` is masked.
    pub fn is_dead(&self, row: usize) -> bool {
        self.dead.is_dead(row)
    }

    /// Opens the segment of `entry` in `dir` with its tombstones, checking the row
    /// count against the manifest.
    ///
    /// # Errors
    /// What is wrong, naming the file.
    pub fn open<K>(
        dir: &Path,
        entry: &SegmentEntry<K::Entry>,
        meta: &K::Meta,
    ) -> Result<Self, String>
    where
        K: SegmentKind<Segment = S>,
    {
        // One stat: a file cut short, grown or replaced is refused ([`super::verify_files`]
        // also checks the bytes).
        let path = super::checked_path(dir, entry).map_err(|e| e.to_string())?;
        let seg = K::open(&path, meta)?;
        let rows = K::rows(&seg);
        if rows as u64 != entry.kind.rows() {
            return Err(format!(
                "{}: row count differs from the manifest",
                entry.file
            ));
        }
        let dead = match &entry.tombstones {
            Some(t) => Tombstones::read(&dir.join(t), rows)?,
            None => Tombstones::default(),
        };
        Ok(Self { seg, dead })
    }
}

/// An opened segment set of kind `K`: its manifest and its segments, memory-mapped.
/// Each kind adds its own query methods (`impl SegmentSet<IndexKind>`).
pub struct SegmentSet<K: SegmentKind> {
    manifest: ManifestOf<K>,
    segments: Vec<Live<K::Segment>>,
}

impl<K: SegmentKind> std::fmt::Debug for SegmentSet<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SegmentSet")
            .field("kind", &K::NAME)
            .field("manifest", &self.manifest)
            .finish_non_exhaustive()
    }
}

impl<K: SegmentKind> SegmentSet<K> {
    /// Opens the set of the store at `db` if it matches the store as it is now.
    /// Costs a manifest read, a few `stat`s and one `mmap` per segment; no row is read.
    ///
    /// # Errors
    /// [`Unavailable::Missing`] (never written), [`Unavailable::Stale`] (the store
    /// changed after it was published), [`Unavailable::Corrupt`].
    pub fn open(db: &Path) -> Result<Self, Unavailable> {
        let dir = dir_of::<K>(db);
        let manifest = ManifestOf::<K>::read(&dir)?;
        if !manifest.holds_for(db) {
            return Err(Unavailable::Stale);
        }
        Self::open_files(&dir, manifest)
    }

    /// Opens the files `manifest` names in `dir`, whatever store it was published for.
    ///
    /// # Errors
    /// [`Unavailable::Corrupt`].
    pub fn open_files(dir: &Path, manifest: ManifestOf<K>) -> Result<Self, Unavailable> {
        let segments = manifest
            .segments
            .iter()
            .map(|e| Live::open::<K>(dir, e, &manifest.kind).map_err(Unavailable::Corrupt))
            .collect::<Result<_, _>>()?;
        Ok(Self { manifest, segments })
    }

    /// A set made of `segments` (for tests that write segments by hand).
    #[cfg(test)]
    pub fn from_parts(manifest: ManifestOf<K>, segments: Vec<Live<K::Segment>>) -> Self {
        Self { manifest, segments }
    }

    /// The manifest this set was opened from.
    pub fn manifest(&self) -> &ManifestOf<K> {
        &self.manifest
    }

    /// The segments with their tombstones, in manifest order.
    pub fn segments(&self) -> &[Live<K::Segment>] {
        &self.segments
    }
}

/// Opened sets kept across calls of a long-running process (`skills serve`):
/// reopened only when the manifest or the store's files changed.
pub struct Cache<K: SegmentKind> {
    held: Mutex<Option<(CacheKey, Arc<SegmentSet<K>>)>>,
}

type CacheKey = (PathBuf, Option<FileStamp>, StoreStamp);

impl<K: SegmentKind> Default for Cache<K> {
    fn default() -> Self {
        Self {
            held: Mutex::new(None),
        }
    }
}

impl<K: SegmentKind> std::fmt::Debug for Cache<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache").field("kind", &K::NAME).finish()
    }
}

impl<K: SegmentKind> Cache<K> {
    /// The set of the store at `db`, as [`SegmentSet::open`] gives it.
    ///
    /// # Errors
    /// [`Unavailable`].
    pub fn get(&self, db: &Path) -> Result<Arc<SegmentSet<K>>, Unavailable> {
        let key = (
            db.to_path_buf(),
            FileStamp::of(&dir_of::<K>(db).join(MANIFEST)),
            StoreStamp::of(db),
        );
        let mut held = self
            .held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((k, set)) = held.as_ref() {
            if *k == key {
                return Ok(set.clone());
            }
        }
        *held = None;
        let set = Arc::new(SegmentSet::open(db)?);
        *held = Some((key, set.clone()));
        Ok(set)
    }
}
