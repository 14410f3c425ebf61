//! The L1 embeddings of the conversations store (`L1.conversation_embeddings`): one
//! vector per *unit* — a window of consecutive messages of one conversation — kept as
//! 8-bit codes ([`crate::search::quantized`]) in immutable, memory-mapped files,
//! written by `skills ingest` and read by semantic-search.
//!
//! ## Units
//!
//! The messages of a conversation (in `msg_index` order; injected and empty messages
//! left out) are cut into windows of [`UnitSpec::window`] messages starting every
//! [`UnitSpec::stride`] messages. A window's vector is the normalised mean of its
//! messages' embeddings (each message embedded once, [`Embedder::embed_batch`]), plus
//! the conversation title's embedding when [`UnitSpec::title`] is set. The stored
//! vector is its 8-bit code `v̂ = s · c`; semantic-search's score is the exact `f32`
//! dot product of the query with `v̂`.
//!
//! ## First passes
//!
//! Two ways find the top n ([`FirstPass`]):
//!
//! - **exact**: the 8-bit pass with proven error bounds
//!   ([`crate::search::vectors::top_dots`]), so the ranking over the stored vectors is
//!   exact. It reads `dim` bytes per unit (268 MB per query at 1M units), ~50–75 ms at
//!   1M units on 2 cores. Used for stores below [`BITS_MIN_UNITS`] live units (they
//!   stay exact, and fast enough) and for segments written before version 2.
//! - **1-bit** ([`crate::search::bits`]): each segment also keeps the sign bits of
//!   every stored vector's residual from the segment's centroid (32 bytes per unit at
//!   256 dimensions) and one factor; a query quantized to 4 bits scores all units with
//!   a few AND + popcount passes, the best [`FirstPass::candidates`] of every thread's
//!   slice by that estimate are re-scored with the exact score above, and the top n of
//!   those are returned. The filters apply in the 1-bit pass, so a filtered query
//!   still gets n results when they exist. Approximate: its recall@15 against the
//!   exact pass is measured by `benches/semantic.rs` (docs/performance.md).
//!
//! ## Files and freshness
//!
//! One kind ([`VectorKind`]) of [`segments`](crate::stores::segments) set, which owns
//! the files, the manifest, publication, tombstones, the tier merges and the DuckDB
//! stamp check (as for the search index, [`super::index`]).
//! `conversations.embeddings/` beside `conversations.duckdb` holds `MANIFEST` (JSON:
//! model id and dimension, unit spec, segment files, their tombstone files, the
//! DuckDB stamp) and the files it names. Writers run inside a writable store, under
//! the search index's lock: at [`ConversationStore::close`](super::ConversationStore::close)
//! the units of the conversations the session changed are masked by tombstones and
//! re-embedded into one new segment; segments are merged by size tier (codes copied,
//! nothing re-embedded), and one with more masked than live units, or of format
//! version 1, is rewritten. A manifest of another model, dimension or unit spec, or
//! one older than the store, makes the writer re-embed everything. Readers trust the
//! files only while the DuckDB stamp matches ([`Embeddings::open`]), so a model
//! change or an ingest run with `--no-embed` is seen as stale instead of mixing
//! vector spaces.
//!
//! The segment file format is in `format.rs`, the search in `query.rs`.

mod format;
mod query;
#[cfg(test)]
mod tests;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::embed::Embedder;
use crate::search::quantized;
use crate::search::scan::Corrupt;
use crate::search::vectors;
use crate::stores::segments::{
    self as set, str_ref, touched_rows, EntryFields, Live, SegmentKind, SegmentSet, SetError,
    Tombstones, Touched, Written,
};
use format::{segment_version, Builder, Segment, VERSION};

pub use crate::stores::segments::{Progress, MANIFEST, MANIFEST_VERSION};
pub use format::UnitMessage;
pub use query::{code_score, ConversationUnits, Filter, FirstPass, UnitHit, UnitRecord, UnitRef};
#[cfg(test)]
pub use query::{stored_vectors, StoredVector};

/// Opened embeddings: their segments, memory-mapped; searched by the methods in
/// `embeddings/query.rs` ([`Embeddings::search`], [`Embeddings::search_with`]).
pub type Embeddings = SegmentSet<VectorKind>;
/// Opened embeddings kept across calls of a long-running process.
pub type Cache = set::Cache<VectorKind>;
/// The embeddings manifest: the set's fields and [`VectorMeta`] (`manifest.model`).
pub type Manifest = set::Manifest<VectorMeta, VectorEntry>;
/// One segment in the manifest, with [`VectorEntry`]'s fields.
pub type SegmentEntry = set::SegmentEntry<VectorEntry>;
/// The embeddings manifest as a writable open found it, read before the database was
/// opened ([`set::Base::read`]).
pub type Base = set::Base<VectorKind>;

/// Messages embedded per batch while writing (bounds memory: ~1 KB per message).
const BATCH_MESSAGES: usize = 16_384;

/// Live units from which [`FirstPass::DEFAULT`] uses the 1-bit pass: below, the exact
/// 8-bit pass costs under ~6 ms at 256 dimensions and the store stays exact.
pub const BITS_MIN_UNITS: u64 = 100_000;
/// [`FirstPass::DEFAULT`]'s candidates per result (`n · OVERSAMPLE`, at least
/// [`CANDIDATES_FLOOR`]), chosen by measurement (docs/performance.md).
pub const OVERSAMPLE: usize = 40;
/// [`FirstPass::DEFAULT`]'s fewest candidates per slice.
pub const CANDIDATES_FLOOR: usize = 1000;

/// Role bits of a unit's role mask.
pub mod role {
    /// A message of role `user` (injected text is never embedded).
    pub const USER: u8 = 1;
    /// A message of role `assistant`.
    pub const ASSISTANT: u8 = 2;
    /// Any other role (`system`, `tool`…).
    pub const OTHER: u8 = 4;

    /// The bit of role name `r`.
    pub fn bit(r: &str) -> u8 {
        match r {
            "user" => USER,
            "assistant" => ASSISTANT,
            _ => OTHER,
        }
    }

    /// The role name of bit `b` (`other` for [`OTHER`]).
    pub fn name(b: u8) -> &'static str {
        match b {
            USER => "user",
            ASSISTANT => "assistant",
            _ => "other",
        }
    }
}

/// The embeddings folder of the store at `db` (`conversations.duckdb` →
/// `conversations.embeddings`).
pub fn dir_of(db: &Path) -> PathBuf {
    set::dir_of::<VectorKind>(db)
}

/// How a conversation's messages become units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnitSpec {
    /// Messages per window (1: one unit per message).
    pub window: u32,
    /// Messages between the starts of two windows (`window`: windows do not overlap).
    pub stride: u32,
    /// Whether the conversation title's embedding is added to every window's.
    pub title: bool,
}

impl UnitSpec {
    /// The unit chosen by measurement on LoCoMo (docs/performance.md, "semantic-search").
    pub const DEFAULT: Self = Self {
        window: 1,
        stride: 1,
        title: false,
    };

    /// The windows of a conversation of `n` messages, as `[start, end)` ranges: one
    /// every `stride` messages, the last ending at `n`.
    pub fn windows(&self, n: usize) -> Vec<(usize, usize)> {
        let (w, s) = (self.window.max(1) as usize, self.stride.max(1) as usize);
        let mut out = Vec::new();
        let mut start = 0;
        while start < n {
            let end = (start + w).min(n);
            out.push((start, end));
            if end == n {
                break;
            }
            start += s;
        }
        out
    }
}

/// The embeddings' own manifest fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VectorMeta {
    /// [`Embedder::name`] of the model that made every vector.
    pub model: String,
    /// Vector dimension.
    pub dim: u32,
    /// How units were cut.
    pub unit: UnitSpec,
    /// Live units.
    pub units: u64,
}

/// The embeddings' own fields of a segment entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VectorEntry {
    /// Units in the file.
    pub units: u64,
}

impl EntryFields for VectorEntry {
    fn rows(&self) -> u64 {
        self.units
    }
}

/// The L1 embeddings as a [`SegmentKind`]: `.vec` files of 8-bit (and 1-bit) codes,
/// one row per unit. A value carries the model and the unit spec a writer embeds
/// with, and counts the messages it embedded.
pub struct VectorKind {
    embedder: Arc<Embedder>,
    unit: UnitSpec,
    /// Messages embedded so far.
    embedded: u64,
}

impl SegmentKind for VectorKind {
    const NAME: &'static str = "embeddings";
    const DIR_EXT: &'static str = "embeddings";
    const FILE_EXT: &'static str = "vec";
    const MISSING: &'static str = "no embeddings yet";
    const STALE: &'static str = "the embeddings are older than the store";

    type Meta = VectorMeta;
    type Entry = VectorEntry;
    type Segment = Segment;

    fn open(path: &Path, meta: &VectorMeta) -> Result<Segment, String> {
        let seg = Segment::open(path)?;
        if seg.dim != meta.dim as usize {
            return Err(format!(
                "{}: dimension {} differs from the manifest's {}",
                path.display(),
                seg.dim,
                meta.dim
            ));
        }
        Ok(seg)
    }

    fn rows(segment: &Segment) -> usize {
        segment.units
    }

    /// A version 1 file (no 1-bit sections) is rewritten once to gain them.
    fn outdated(path: &Path) -> bool {
        segment_version(path).is_some_and(|v| v < VERSION)
    }

    fn build(
        &mut self,
        conn: &duckdb::Connection,
        only: Option<&Touched>,
        path: &Path,
        progress: Progress<'_>,
    ) -> Result<Written<VectorEntry>, SetError> {
        let (units, messages, bytes) = self.build_from_table(conn, only, path, progress)?;
        self.embedded += messages;
        Ok(Written {
            bytes,
            entry: VectorEntry { units },
        })
    }

    /// Copies the live units of `parts` into one segment: codes copied, nothing
    /// re-embedded.
    fn merge(
        &mut self,
        parts: &[Live<Segment>],
        path: &Path,
    ) -> Result<Written<VectorEntry>, SetError> {
        let builder = merged(self.embedder.dim(), parts, path)?;
        let bytes = builder.write(path)?;
        Ok(Written {
            bytes,
            entry: VectorEntry {
                units: builder.units() as u64,
            },
        })
    }

    fn mask(
        &self,
        seg: &Segment,
        touched: &Touched,
        dead: &mut Tombstones,
        _entry: &mut VectorEntry,
    ) -> Result<u64, SetError> {
        mask(seg, touched, dead)
    }

    fn meta(&self, segments: &[SegmentEntry]) -> VectorMeta {
        VectorMeta {
            model: self.embedder.name().to_owned(),
            dim: u32::try_from(self.embedder.dim()).unwrap_or(0),
            unit: self.unit,
            units: segments.iter().map(|e| e.live).sum(),
        }
    }

    /// Only vectors of the same model, dimension and unit spec: another re-embeds all.
    fn accepts(&self, base: &VectorMeta) -> Result<(), String> {
        if base.model != self.embedder.name() || base.dim as usize != self.embedder.dim() {
            return Err(format!(
                "model changed: `{}` ({} dimensions) → `{}` ({})",
                base.model,
                base.dim,
                self.embedder.name(),
                self.embedder.dim()
            ));
        }
        if base.unit != self.unit {
            return Err("unit changed".to_owned());
        }
        Ok(())
    }
}

/// The live units of `parts`, in order, gathered into one builder (codes copied,
/// nothing re-embedded); `path` names the merged file in errors.
fn merged(dim: usize, parts: &[Live<Segment>], path: &Path) -> Result<Builder, SetError> {
    let bad = |_| {
        SetError::Mismatch(format!(
            "a segment merged into {} is damaged",
            path.display()
        ))
    };
    let mut builder = Builder::new(dim);
    for live in parts {
        let seg = &live.seg;
        let view = seg.view().map_err(bad)?;
        let conv: &[u32] = seg.cast(4).map_err(bad)?;
        let mut renumber: HashMap<u32, u32> = HashMap::new();
        for u in 0..seg.units {
            if live.is_dead(u) {
                continue;
            }
            let c = *conv.get(u).ok_or(Corrupt).map_err(bad)?;
            let nc = match renumber.get(&c) {
                Some(&n) => n,
                None => {
                    let (s, id) = seg.conversation(c as usize).map_err(bad)?;
                    let n = builder.conversation(s, id);
                    renumber.insert(c, n);
                    n
                }
            };
            let d = seg.dim;
            let codes = view
                .codes
                .get(u * d..(u + 1) * d)
                .ok_or(Corrupt)
                .map_err(bad)?;
            let code = quantized::Encoded {
                scale: view.scale[u],
                err_row: view.err_row[u],
                err_query: view.err_query[u],
            };
            let msgs = seg.unit_messages(u).map_err(bad)?;
            let msgs: Vec<(&str, i64, u8)> = msgs
                .iter()
                .map(|m| (m.message_id.as_str(), m.created_us, role::bit(m.role)))
                .collect();
            builder.push(nc, codes, code, &msgs);
        }
    }
    Ok(builder)
}

/// What [`Writer::update`] did, for the ingest summary.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct EmbedReport {
    /// True when every unit was embedded again.
    pub rebuilt: bool,
    /// Why, when it was.
    pub reason: Option<String>,
    /// Messages embedded in this update.
    pub messages_embedded: u64,
    /// Units written into new segments (including merges).
    pub units_written: u64,
    /// Live units after the update.
    pub units: u64,
    /// Segments after the update.
    pub segments: usize,
    /// Bytes of all segment files.
    pub bytes: u64,
    /// [`Embedder::name`].
    pub model: String,
}

/// The writer side, held by a writable store (under the search index's lock).
pub struct Writer {
    set: set::Writer<VectorKind>,
    embedder: Arc<Embedder>,
    unit: UnitSpec,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("dir", &self.set.dir())
            .field("unit", &self.unit)
            .finish_non_exhaustive()
    }
}

impl Writer {
    /// A writer for the store at `db` over the manifest `base` found, embedding with
    /// `embedder` into units cut as `unit`.
    ///
    /// # Errors
    /// [`SetError::Io`] when the folder cannot be created.
    pub fn begin(
        db: &Path,
        base: Base,
        embedder: Arc<Embedder>,
        unit: UnitSpec,
    ) -> Result<Self, SetError> {
        Ok(Self {
            set: set::Writer::begin(db, base)?,
            embedder,
            unit,
        })
    }

    /// Brings the embeddings up to date with the table through `conn`, given the
    /// conversations this session changed, calling `progress` with (messages embedded
    /// so far, messages to embed); returns the manifest to publish once the database
    /// is closed ([`Writer::publish`]).
    ///
    /// # Errors
    /// [`SetError`] when the table cannot be read or a file cannot be written.
    pub fn update(
        &self,
        conn: &duckdb::Connection,
        touched: &Touched,
        progress: Progress<'_>,
    ) -> Result<(Manifest, EmbedReport), SetError> {
        let mut kind = VectorKind {
            embedder: self.embedder.clone(),
            unit: self.unit,
            embedded: 0,
        };
        let (manifest, u) = self.set.update(&mut kind, conn, touched, progress)?;
        let report = EmbedReport {
            rebuilt: u.rebuilt,
            reason: u.reason,
            messages_embedded: kind.embedded,
            units_written: u.written,
            units: u.live,
            segments: u.segments,
            bytes: u.bytes,
            model: manifest.model.clone(),
        };
        Ok((manifest, report))
    }

    /// Publishes `manifest` against the database as it is now (after it was
    /// checkpointed and closed), then removes files no manifest names; `store_id` is
    /// the store's identity, as for the search index.
    ///
    /// # Errors
    /// [`SetError::Io`].
    pub fn publish(self, manifest: Manifest, store_id: Option<String>) -> Result<(), SetError> {
        self.set.publish(manifest, store_id)
    }
}

impl VectorKind {
    /// Embeds the messages of the table (of the `only` conversations, when given) and
    /// writes their units as a segment at `path`: (units, messages embedded, bytes).
    fn build_from_table(
        &self,
        conn: &duckdb::Connection,
        only: Option<&Touched>,
        path: &Path,
        progress: Progress<'_>,
    ) -> Result<(u64, u64, u64), SetError> {
        let mut filter =
            String::from(" WHERE is_injected IS NOT TRUE AND length(trim(content)) > 0");
        if let Some(touched) = only {
            filter.push_str(" AND");
            filter.push_str(&touched_rows(conn, "embed_touched", touched)?);
        }
        let total: i64 = conn.query_row(
            &format!("SELECT count(*) FROM all_conversations{filter}"),
            [],
            |r| r.get(0),
        )?;
        let total = u64::try_from(total).unwrap_or(0);
        progress(0, total);
        let sql = format!(
            "SELECT source, conversation_id, message_id, role, epoch_us(created), content, \
             coalesce(conversation_title, '') FROM all_conversations{filter} \
             ORDER BY source, conversation_id, msg_index, created, message_id"
        );
        let mut builder = Builder::new(self.embedder.dim());
        let mut batch = Batch::default();
        let mut done = 0u64;
        {
            let mut stmt = conn.prepare(&sql)?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                let (source, conv) = (str_ref(r, 0)?, str_ref(r, 1)?);
                let new_conv = batch
                    .convs
                    .last()
                    .is_none_or(|c| c.source != source || c.conversation_id != conv);
                if new_conv {
                    if batch.texts.len() >= BATCH_MESSAGES {
                        done += self.flush(&mut batch, &mut builder);
                        progress(done, total);
                    }
                    let title = str_ref(r, 6)?;
                    batch.convs.push(Conv {
                        source: source.to_owned(),
                        conversation_id: conv.to_owned(),
                        title: (self.unit.title && !title.trim().is_empty()).then(|| {
                            batch.texts.push(title.to_owned());
                            batch.texts.len() - 1
                        }),
                        messages: Vec::new(),
                    });
                }
                let created: i64 = r.get(4)?;
                let content = str_ref(r, 5)?.to_owned();
                let id = str_ref(r, 2)?.to_owned();
                let bit = role::bit(str_ref(r, 3)?);
                batch.texts.push(content);
                let at = batch.texts.len() - 1;
                if let Some(c) = batch.convs.last_mut() {
                    c.messages.push((id, created, bit, at));
                }
            }
        }
        done += self.flush(&mut batch, &mut builder);
        progress(done, total);
        if only.is_some() {
            conn.execute_batch("DROP TABLE IF EXISTS embed_touched")?;
        }
        let bytes = builder.write(path)?;
        Ok((builder.units() as u64, done, bytes))
    }

    /// Embeds the batch's texts and adds its conversations' units; returns messages
    /// embedded.
    fn flush(&self, batch: &mut Batch, builder: &mut Builder) -> u64 {
        let dim = self.embedder.dim();
        let flat = self.embedder.embed_batch(&batch.texts);
        let row = |i: usize| &flat[i * dim..(i + 1) * dim];
        let mut embedded = 0;
        let mut codes = Vec::with_capacity(dim);
        for c in batch.convs.drain(..) {
            embedded += c.messages.len() as u64;
            let conv = builder.conversation(&c.source, &c.conversation_id);
            for (a, b) in self.unit.windows(c.messages.len()) {
                let mut sum = vec![0.0f32; dim];
                for m in &c.messages[a..b] {
                    for (s, x) in sum.iter_mut().zip(row(m.3)) {
                        *s += x;
                    }
                }
                if let Some(t) = c.title {
                    for (s, x) in sum.iter_mut().zip(row(t)) {
                        *s += x;
                    }
                }
                let unit = vectors::normalized(&sum);
                codes.clear();
                let Some(first) = quantized::encode(&unit, &mut codes) else {
                    continue;
                };
                // The stored vector is the code itself: encode v̂ = s · c again, so
                // the error factors bound the dot products the search computes.
                let stored: Vec<f32> = codes.iter().map(|&x| first.scale * f32::from(x)).collect();
                codes.clear();
                let Some(code) = quantized::encode(&stored, &mut codes) else {
                    continue;
                };
                let msgs: Vec<(&str, i64, u8)> = c.messages[a..b]
                    .iter()
                    .map(|m| (m.0.as_str(), m.1, m.2))
                    .collect();
                builder.push(conv, &codes, code, &msgs);
            }
        }
        batch.texts.clear();
        embedded
    }
}

/// Messages waiting to be embedded, grouped by conversation.
#[derive(Default)]
struct Batch {
    texts: Vec<String>,
    convs: Vec<Conv>,
}

struct Conv {
    source: String,
    conversation_id: String,
    title: Option<usize>,
    /// (message id, created µs, role bit, index into the batch's texts)
    messages: Vec<(String, i64, u8, usize)>,
}

/// Sets the tombstone bits of the units of `seg` whose conversation is in `touched`
/// and that are not masked yet; returns how many.
fn mask(seg: &Segment, touched: &Touched, dead: &mut Tombstones) -> Result<u64, SetError> {
    let bad = |_| SetError::Mismatch("an embeddings segment is damaged".into());
    let mut wanted = HashSet::new();
    for c in 0..seg.conversations() {
        let (s, id) = seg.conversation(c).map_err(bad)?;
        if touched.contains(&(s.to_owned(), id.to_owned())) {
            wanted.insert(u32::try_from(c).unwrap_or(u32::MAX));
        }
    }
    if wanted.is_empty() {
        return Ok(0);
    }
    let conv: &[u32] = seg.cast(4).map_err(bad)?;
    let mut n = 0;
    for (u, c) in conv.iter().enumerate() {
        if wanted.contains(c) && dead.kill(u) {
            n += 1;
        }
    }
    Ok(n)
}
