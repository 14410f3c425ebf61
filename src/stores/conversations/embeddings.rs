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
//! ## Files and freshness (as the search index, [`super::index`])
//!
//! `conversations.embeddings/` beside `conversations.duckdb` holds `MANIFEST` (JSON:
//! model id and dimension, unit spec, segment files, their tombstone files, the
//! DuckDB stamp) and the files it names. Writers run inside a writable store, under
//! the search index's lock: at [`ConversationStore::close`](super::ConversationStore::close)
//! the units of the conversations the session changed are masked by tombstones and
//! re-embedded into one new segment; segments are merged (codes copied, nothing
//! re-embedded) once there are more than [`MAX_SEGMENTS`] or more masked than live
//! units. A manifest of another model, dimension or unit spec, or one older than the
//! store, makes the writer re-embed everything. Readers trust the files only while the
//! DuckDB stamp matches ([`Embeddings::open`]), so a model change or an ingest run
//! with `--no-embed` is seen as stale instead of mixing vector spaces.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use super::index::{str_ref, touched_rows};
use crate::stores::segments::{
    first_free, next_name, sync_dir, write_synced, FileStamp, SetError as IndexError, StoreStamp,
    Touched, Unavailable,
};

fn read_tombstones(path: &Path, rows: usize) -> Result<Vec<u64>, String> {
    crate::stores::segments::Tombstones::read(path, rows).map(|t| t.words().to_vec())
}
use super::segment::{u32_at, u64_at};
use crate::cancel::Cancel;
use crate::embed::Embedder;
use crate::search::bits::{self, BitView};
use crate::search::quantized::{self, View};
use crate::search::scan::Corrupt;
use crate::search::vectors;

/// Name of the manifest file inside the embeddings folder.
pub const MANIFEST: &str = "MANIFEST";
/// Version of the manifest this code writes and reads.
pub const MANIFEST_VERSION: u32 = 1;
/// Segments kept before they are merged into one.
pub const MAX_SEGMENTS: usize = 8;
/// Messages embedded per batch while writing (bounds memory: ~1 KB per message).
const BATCH_MESSAGES: usize = 16_384;

const MAGIC: &[u8; 8] = b"SKILLSCV";
/// Segment format written: 2 adds the 1-bit sections (15–17) to version 1's.
const VERSION: u32 = 2;
/// Sections of a version-1 segment (still read; searched by the exact pass only).
const SECTIONS_V1: usize = 15;
const BOM: u32 = 0x0102_0304;
const HEADER: usize = 64;
const SECTIONS: usize = 18;

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
    db.with_extension("embeddings")
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

/// One segment in the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentEntry {
    /// File name inside the folder.
    pub file: String,
    /// Units in the file.
    pub units: u64,
    /// Units not masked by the tombstones.
    pub live: u64,
    /// File length.
    pub bytes: u64,
    /// Tombstone file (a bit set over the units, little-endian `u64` words), if any.
    pub tombstones: Option<String>,
}

/// The manifest: the model, the unit, the files and the store they were written for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// [`MANIFEST_VERSION`].
    pub version: u32,
    /// Incremented by every publication.
    pub generation: u64,
    /// Next number for a new file name.
    pub next_file: u64,
    /// [`Embedder::name`] of the model that made every vector.
    pub model: String,
    /// Vector dimension.
    pub dim: u32,
    /// How units were cut.
    pub unit: UnitSpec,
    /// Segment files.
    pub segments: Vec<SegmentEntry>,
    /// Live units.
    pub units: u64,
    /// The DuckDB files the embeddings were published against.
    pub store: StoreStamp,
}

impl Manifest {
    /// Reads the manifest in `dir`.
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

// ---------------------------------------------------------------------------------
// Segment files
//
// offset 0  magic "SKILLSCV" · u32 version (2; 1 still read) · u32 byte-order mark ·
//           u64 units n · u64 messages m · u32 dim · u32 sections (18; 15 in version 1)
//           · reserved to 64
//        64 section table: (offset u64, length u64) per section; sections 8-aligned
//
//  0 codes i8[n·dim]      1 scale f32[n]        2 err_row f32[n]   3 err_query f32[n]
//  4 conversation u32[n]  5 unit→messages u64[n+1]                 6 role mask u8[n]
//  7 first created i64[n] 8 last created i64[n]
//  9 message created i64[m]  10 message role bit u8[m]
// 11, 12 message ids: u64[m+1] offsets, bytes
// 13, 14 conversations: u64[c+1] offsets, bytes ("source\0conversation_id")
// version 2 only (`search::bits`; w = ⌈dim / 64⌉ words per unit):
// 15 sign bits u64[n·w] of v̂ − centroid   16 bit factor f32[n]   17 centroid f32[dim]
//
// Bytes per unit: dim (codes) + 12 (scale, errors) + 4 (conversation) + 8 (message
// range) + 1 (roles) + 16 (times) + 8·w + 4 (1-bit code, version 2) + the messages'
// ids and times: 352 at 256 dimensions and one message per unit in version 1, 388 in 2.
// ---------------------------------------------------------------------------------

/// One message of a unit, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitMessage {
    /// `message_id`.
    pub message_id: String,
    /// `created`, µs since the epoch.
    pub created_us: i64,
    /// `role` ([`role::name`] of its bit).
    pub role: &'static str,
}

/// Builds one segment file.
#[derive(Debug, Default)]
struct Builder {
    dim: usize,
    codes: Vec<i8>,
    scale: Vec<f32>,
    err_row: Vec<f32>,
    err_query: Vec<f32>,
    conv: Vec<u32>,
    unit_msgs: Vec<u64>,
    roles: Vec<u8>,
    first: Vec<i64>,
    last: Vec<i64>,
    msg_created: Vec<i64>,
    msg_role: Vec<u8>,
    msg_off: Vec<u64>,
    msg_bytes: Vec<u8>,
    conv_off: Vec<u64>,
    conv_bytes: Vec<u8>,
}

impl Builder {
    fn new(dim: usize) -> Self {
        Self {
            dim,
            unit_msgs: vec![0],
            msg_off: vec![0],
            conv_off: vec![0],
            ..Self::default()
        }
    }

    fn units(&self) -> usize {
        self.scale.len()
    }

    /// Starts a new conversation; returns its number in this segment.
    fn conversation(&mut self, source: &str, conversation_id: &str) -> u32 {
        self.conv_bytes.extend_from_slice(source.as_bytes());
        self.conv_bytes.push(0);
        self.conv_bytes
            .extend_from_slice(conversation_id.as_bytes());
        self.conv_off.push(self.conv_bytes.len() as u64);
        u32::try_from(self.conv_off.len() - 2).unwrap_or(u32::MAX)
    }

    /// Adds a unit whose stored vector is `code` (scale and factors of [`quantized::encode`]).
    fn push(
        &mut self,
        conv: u32,
        codes: &[i8],
        code: quantized::Encoded,
        messages: &[(&str, i64, u8)],
    ) {
        self.codes.extend_from_slice(codes);
        self.scale.push(code.scale);
        self.err_row.push(code.err_row);
        self.err_query.push(code.err_query);
        self.conv.push(conv);
        let mut mask = 0;
        let (mut lo, mut hi) = (i64::MAX, i64::MIN);
        for &(id, created, r) in messages {
            self.msg_bytes.extend_from_slice(id.as_bytes());
            self.msg_off.push(self.msg_bytes.len() as u64);
            self.msg_created.push(created);
            self.msg_role.push(r);
            mask |= r;
            lo = lo.min(created);
            hi = hi.max(created);
        }
        self.unit_msgs.push(self.msg_created.len() as u64);
        self.roles.push(mask);
        self.first.push(lo);
        self.last.push(hi);
    }

    fn write(&self, path: &Path) -> Result<u64, IndexError> {
        self.write_as(path, VERSION)
    }

    /// The 1-bit sections of the units held: (sign words, factors, centroid), computed
    /// from the stored vectors `v̂ = s · c`.
    fn bit_sections(&self) -> (Vec<u64>, Vec<f32>, Vec<f32>) {
        let d = self.dim;
        let stored = |u: usize| {
            let s = self.scale[u];
            self.codes[u * d..(u + 1) * d]
                .iter()
                .map(move |&c| s * f32::from(c))
        };
        let mut centroid = bits::Centroid::new(d);
        for u in 0..self.units() {
            centroid.add(stored(u));
        }
        let centroid = centroid.mean();
        let mut words = Vec::with_capacity(self.units() * bits::words(d));
        let mut factor = Vec::with_capacity(self.units());
        let mut v = Vec::with_capacity(d);
        for u in 0..self.units() {
            v.clear();
            v.extend(stored(u));
            factor.push(bits::encode(&v, &centroid, &mut words));
        }
        (words, factor, centroid)
    }

    /// Writes the segment in format `version` (1: without the 1-bit sections, kept for
    /// the tests that old segments are still read).
    fn write_as(&self, path: &Path, version: u32) -> Result<u64, IndexError> {
        let (words, factor, centroid) = if version >= 2 {
            self.bit_sections()
        } else {
            Default::default()
        };
        let all: [&[u8]; SECTIONS] = [
            bytemuck::cast_slice(&self.codes),
            bytemuck::cast_slice(&self.scale),
            bytemuck::cast_slice(&self.err_row),
            bytemuck::cast_slice(&self.err_query),
            bytemuck::cast_slice(&self.conv),
            bytemuck::cast_slice(&self.unit_msgs),
            &self.roles,
            bytemuck::cast_slice(&self.first),
            bytemuck::cast_slice(&self.last),
            bytemuck::cast_slice(&self.msg_created),
            &self.msg_role,
            bytemuck::cast_slice(&self.msg_off),
            &self.msg_bytes,
            bytemuck::cast_slice(&self.conv_off),
            &self.conv_bytes,
            bytemuck::cast_slice(&words),
            bytemuck::cast_slice(&factor),
            bytemuck::cast_slice(&centroid),
        ];
        let sections = if version >= 2 {
            &all[..]
        } else {
            &all[..SECTIONS_V1]
        };
        let count = sections.len();
        let mut out = Vec::with_capacity(
            HEADER + count * 16 + sections.iter().map(|s| s.len() + 8).sum::<usize>(),
        );
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&version.to_le_bytes());
        out.extend_from_slice(&BOM.to_le_bytes());
        out.extend_from_slice(&(self.units() as u64).to_le_bytes());
        out.extend_from_slice(&(self.msg_created.len() as u64).to_le_bytes());
        out.extend_from_slice(&u32::try_from(self.dim).unwrap_or(0).to_le_bytes());
        out.extend_from_slice(&(count as u32).to_le_bytes());
        out.resize(HEADER + count * 16, 0);
        for (i, s) in sections.iter().enumerate() {
            while out.len() % 8 != 0 {
                out.push(0);
            }
            let off = out.len() as u64;
            out[HEADER + i * 16..HEADER + i * 16 + 8].copy_from_slice(&off.to_le_bytes());
            out[HEADER + i * 16 + 8..HEADER + i * 16 + 16]
                .copy_from_slice(&(s.len() as u64).to_le_bytes());
            out.extend_from_slice(s);
        }
        write_synced(path, &out)?;
        Ok(out.len() as u64)
    }
}

/// A segment file, memory-mapped and checked for shape when opened.
struct Segment {
    map: memmap2::Mmap,
    units: usize,
    messages: usize,
    dim: usize,
    /// (offset, length) of each section; sections 15–17 are (0, 0) in a version-1 file.
    sections: [(usize, usize); SECTIONS],
    /// True when the file holds the 1-bit sections (version 2).
    has_bits: bool,
    /// Masked units (bit set), empty when none.
    dead: Vec<u64>,
}

impl Segment {
    fn open(path: &Path, dead: Vec<u64>) -> Result<Self, String> {
        let shown = path.display();
        let file = std::fs::File::open(path).map_err(|e| format!("{shown}: {e}"))?;
        // SAFETY: segment files are written once under a fresh name, fsynced, published
        // by renaming the manifest, and never modified afterwards (only unlinked, which
        // leaves existing mappings valid), so the mapped bytes cannot change under us.
        #[allow(unsafe_code)]
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| format!("{shown}: {e}"))?;
        let b: &[u8] = &map;
        if b.len() < HEADER + SECTIONS_V1 * 16 || &b[..8] != MAGIC {
            return Err(format!("{shown}: not an embeddings segment"));
        }
        let version = u32_at(b, 8);
        let count = match version {
            1 => SECTIONS_V1,
            VERSION => SECTIONS,
            _ => 0,
        };
        if count == 0 || u32_at(b, 12) != BOM || cfg!(target_endian = "big") {
            return Err(format!("{shown}: another format version or byte order"));
        }
        if b.len() < HEADER + count * 16 {
            return Err(format!("{shown}: not an embeddings segment"));
        }
        let units = usize::try_from(u64_at(b, 16)).map_err(|_| format!("{shown}: units"))?;
        let messages = usize::try_from(u64_at(b, 24)).map_err(|_| format!("{shown}: messages"))?;
        let dim = u32_at(b, 32) as usize;
        if u32_at(b, 36) as usize != count || !(1..=quantized::MAX_DIM).contains(&dim) {
            return Err(format!("{shown}: section count or dimension"));
        }
        let mut sections = [(0usize, 0usize); SECTIONS];
        for (i, s) in sections.iter_mut().enumerate().take(count) {
            let off = u64_at(b, HEADER + i * 16);
            let len = u64_at(b, HEADER + i * 16 + 8);
            let end = off
                .checked_add(len)
                .ok_or_else(|| format!("{shown}: section {i}"))?;
            if !off.is_multiple_of(8) || end > b.len() as u64 {
                return Err(format!("{shown}: section {i} lies outside the file"));
            }
            *s = (off as usize, len as usize);
        }
        let has_bits = count == SECTIONS;
        let mut expect = vec![
            (0, units * dim),
            (1, units * 4),
            (2, units * 4),
            (3, units * 4),
            (4, units * 4),
            (5, (units + 1) * 8),
            (6, units),
            (7, units * 8),
            (8, units * 8),
            (9, messages * 8),
            (10, messages),
            (11, (messages + 1) * 8),
        ];
        if has_bits {
            expect.extend([
                (15, units * bits::words(dim) * 8),
                (16, units * 4),
                (17, dim * 4),
            ]);
        }
        for (i, len) in expect {
            if sections[i].1 != len {
                return Err(format!(
                    "{shown}: section {i} has {} bytes, expected {len}",
                    sections[i].1
                ));
            }
        }
        if sections[13].1 < 8 || !sections[13].1.is_multiple_of(8) {
            return Err(format!("{shown}: conversation table"));
        }
        if !dead.is_empty() && dead.len() != units.div_ceil(64) {
            return Err(format!("{shown}: tombstones of another length"));
        }
        Ok(Self {
            map,
            units,
            messages,
            dim,
            sections,
            has_bits,
            dead,
        })
    }

    /// The 1-bit sections, `None` in a version-1 file.
    fn bit_view(&self) -> Result<Option<BitView<'_>>, Corrupt> {
        if !self.has_bits {
            return Ok(None);
        }
        Ok(Some(BitView {
            dim: self.dim,
            bits: self.cast(15)?,
            factor: self.cast(16)?,
            centroid: self.cast(17)?,
        }))
    }

    fn bytes(&self, i: usize) -> &[u8] {
        let (off, len) = self.sections[i];
        &self.map[off..off + len]
    }

    fn cast<T: bytemuck::Pod>(&self, i: usize) -> Result<&[T], Corrupt> {
        bytemuck::try_cast_slice(self.bytes(i)).map_err(|_| Corrupt)
    }

    fn view(&self) -> Result<View<'_>, Corrupt> {
        Ok(View {
            dim: self.dim,
            codes: self.cast(0)?,
            scale: self.cast(1)?,
            err_row: self.cast(2)?,
            err_query: self.cast(3)?,
        })
    }

    fn is_dead(&self, unit: usize) -> bool {
        self.dead
            .get(unit / 64)
            .is_some_and(|w| w & (1 << (unit % 64)) != 0)
    }

    /// String `i` of the table in sections `off`, `off + 1`.
    fn string(&self, off: usize, i: usize) -> Result<&str, Corrupt> {
        let offsets: &[u64] = self.cast(off)?;
        let bytes = self.bytes(off + 1);
        let (a, b) = (
            *offsets.get(i).ok_or(Corrupt)? as usize,
            *offsets.get(i + 1).ok_or(Corrupt)? as usize,
        );
        let s = bytes.get(a..b).ok_or(Corrupt)?;
        std::str::from_utf8(s).map_err(|_| Corrupt)
    }

    fn conversations(&self) -> usize {
        self.sections[13].1 / 8 - 1
    }

    /// (`source`, `conversation_id`) of conversation `c`.
    fn conversation(&self, c: usize) -> Result<(&str, &str), Corrupt> {
        self.string(13, c)?.split_once('\0').ok_or(Corrupt)
    }

    /// The message range of unit `u`.
    fn unit_range(&self, u: usize) -> Result<(usize, usize), Corrupt> {
        let offs: &[u64] = self.cast(5)?;
        let (a, b) = (
            *offs.get(u).ok_or(Corrupt)? as usize,
            *offs.get(u + 1).ok_or(Corrupt)? as usize,
        );
        if a > b || b > self.messages {
            return Err(Corrupt);
        }
        Ok((a, b))
    }

    fn unit_messages(&self, u: usize) -> Result<Vec<UnitMessage>, Corrupt> {
        let (a, b) = self.unit_range(u)?;
        let created: &[i64] = self.cast(9)?;
        let roles = self.bytes(10);
        (a..b)
            .map(|m| {
                Ok(UnitMessage {
                    message_id: self.string(11, m)?.to_owned(),
                    created_us: *created.get(m).ok_or(Corrupt)?,
                    role: role::name(*roles.get(m).ok_or(Corrupt)?),
                })
            })
            .collect()
    }

    /// Unit `u`'s stored vector `v̂ = s · c`.
    fn vector(&self, u: usize) -> Result<Vec<f32>, Corrupt> {
        let view = self.view()?;
        let codes = view
            .codes
            .get(u * self.dim..(u + 1) * self.dim)
            .ok_or(Corrupt)?;
        let s = *view.scale.get(u).ok_or(Corrupt)?;
        Ok(codes.iter().map(|&c| s * f32::from(c)).collect())
    }
}

/// Exact dot product of `q` with the stored vector of slot `slot` (`s · c`, summed in
/// `f32` in dimension order).
fn exact_dot(view: &View<'_>, q: &[f32], slot: usize) -> f32 {
    let d = view.dim;
    let (Some(codes), Some(&s)) = (
        view.codes.get(slot * d..(slot + 1) * d),
        view.scale.get(slot),
    ) else {
        return 0.0;
    };
    let mut acc = -0.0f32;
    for (qd, &c) in q.iter().zip(codes) {
        acc += qd * (s * f32::from(c));
    }
    acc
}

// ---------------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------------

/// What a semantic search keeps: a row mask over units.
#[derive(Debug, Clone, Copy, Default)]
pub struct Filter<'a> {
    /// Role bits a unit must hold one of (0: any).
    pub roles: u8,
    /// `source = ?`.
    pub source: Option<&'a str>,
    /// `conversation_id = ?`.
    pub conversation_id: Option<&'a str>,
    /// Some message at or after this time (µs).
    pub since_us: Option<i64>,
    /// Some message before this time (µs, exclusive).
    pub until_us: Option<i64>,
}

/// How [`Embeddings::search_with`] finds the top n (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FirstPass {
    /// The 8-bit pass with proven bounds: the exact top n over the stored vectors.
    Exact,
    /// The 1-bit pass with exact re-scoring, for stores of at least `min_units` live
    /// units (the exact pass below that, and for segments without 1-bit sections).
    Bits {
        /// Live units of the store from which this pass is used (0: always).
        min_units: u64,
        /// Candidates per result re-scored exactly.
        oversample: usize,
        /// Fewest candidates per thread's slice.
        floor: usize,
    },
}

impl FirstPass {
    /// What [`Embeddings::search`] uses: the 1-bit pass from [`BITS_MIN_UNITS`] live
    /// units, [`OVERSAMPLE`] candidates per result, at least [`CANDIDATES_FLOOR`].
    pub const DEFAULT: Self = Self::Bits {
        min_units: BITS_MIN_UNITS,
        oversample: OVERSAMPLE,
        floor: CANDIDATES_FLOOR,
    };

    /// Units re-scored exactly per slice for `n` results (`None`: the exact pass).
    pub fn candidates(&self, n: usize) -> Option<usize> {
        match *self {
            Self::Exact => None,
            Self::Bits {
                oversample, floor, ..
            } => Some(n.saturating_mul(oversample).max(floor).max(n)),
        }
    }
}

/// One unit of a result.
#[derive(Debug, Clone, PartialEq)]
pub struct UnitHit {
    /// Exact dot product of the query with the unit's stored vector (a cosine, up to
    /// the 8-bit code's norm: within ~1e-2 of 1 for a unit vector).
    pub score: f32,
    /// `source`.
    pub source: String,
    /// `conversation_id`.
    pub conversation_id: String,
    /// The window's messages, in conversation order.
    pub messages: Vec<UnitMessage>,
}

/// Opened embeddings: their segments, memory-mapped.
pub struct Embeddings {
    manifest: Manifest,
    segments: Vec<Segment>,
}

impl std::fmt::Debug for Embeddings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embeddings")
            .field("manifest", &self.manifest)
            .finish_non_exhaustive()
    }
}

impl Embeddings {
    /// Opens the embeddings of the store at `db` if they match the store as it is now.
    /// Costs a manifest read, a few `stat`s and one `mmap` per segment.
    ///
    /// # Errors
    /// [`Unavailable::Missing`] (never embedded: `--no-embed`, no model at ingest),
    /// [`Unavailable::Stale`] (the store changed after they were written),
    /// [`Unavailable::Corrupt`].
    pub fn open(db: &Path) -> Result<Self, Unavailable> {
        let dir = dir_of(db);
        let manifest = Manifest::read(&dir)?;
        if StoreStamp::of(db) != manifest.store {
            return Err(Unavailable::Stale);
        }
        let mut segments = Vec::with_capacity(manifest.segments.len());
        for e in &manifest.segments {
            let dead = match &e.tombstones {
                Some(t) => {
                    read_tombstones(&dir.join(t), e.units as usize).map_err(Unavailable::Corrupt)?
                }
                None => Vec::new(),
            };
            let seg = Segment::open(&dir.join(&e.file), dead).map_err(Unavailable::Corrupt)?;
            if seg.units as u64 != e.units || seg.dim != manifest.dim as usize {
                return Err(Unavailable::Corrupt(format!(
                    "{}: units or dimension differ from the manifest",
                    e.file
                )));
            }
            segments.push(seg);
        }
        Ok(Self { manifest, segments })
    }

    /// The manifest these embeddings were opened from.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// [`Embeddings::search_with`] with [`FirstPass::DEFAULT`].
    ///
    /// # Errors
    /// [`Corrupt`] when a segment is damaged.
    pub fn search(
        &self,
        q: &[f32],
        n: usize,
        filter: &Filter<'_>,
        min_score: f32,
        threads: usize,
        stop: &Cancel,
    ) -> Result<Vec<UnitHit>, Corrupt> {
        self.search_with(q, n, filter, min_score, threads, stop, FirstPass::DEFAULT)
    }

    /// The `n` units with the largest exact scores against the unit query vector `q`
    /// (`dim` values) among those `filter` keeps, best first (ties: segment, then unit
    /// order), with `score ≥ min_score`: exactly those with [`FirstPass::Exact`], the
    /// best of the re-scored candidates with [`FirstPass::Bits`] (every score returned
    /// is the exact one). The first pass runs on up to `threads` threads. Once `stop`
    /// has stopped, no further unit is scored and fewer hits come back (the host then
    /// discards them). An empty result for `n = 0` or a `q` of another length.
    ///
    /// # Errors
    /// [`Corrupt`] when a segment is damaged.
    #[allow(clippy::too_many_arguments)]
    pub fn search_with(
        &self,
        q: &[f32],
        n: usize,
        filter: &Filter<'_>,
        min_score: f32,
        threads: usize,
        stop: &Cancel,
        pass: FirstPass,
    ) -> Result<Vec<UnitHit>, Corrupt> {
        if n == 0 || q.len() != self.manifest.dim as usize {
            return Ok(Vec::new());
        }
        let candidates = match pass {
            FirstPass::Bits { min_units, .. } if self.manifest.units >= min_units => {
                pass.candidates(n)
            }
            _ => None,
        };
        // (score, segment, unit)
        let mut best: Vec<(f32, usize, usize)> = Vec::new();
        for (si, seg) in self.segments.iter().enumerate() {
            let keep_conv = conversation_mask(seg, filter)?;
            let view = seg.view()?;
            let conv: &[u32] = seg.cast(4)?;
            let roles = seg.bytes(6);
            let (first, last): (&[i64], &[i64]) = (seg.cast(7)?, seg.cast(8)?);
            if stop.is_stopped() {
                break;
            }
            let keep = |u: usize| {
                !stop.is_stopped()
                    && !seg.is_dead(u)
                    && keep_conv
                        .as_ref()
                        .is_none_or(|m| conv.get(u).is_some_and(|&c| m.contains(&c)))
                    && (filter.roles == 0 || roles.get(u).is_some_and(|r| r & filter.roles != 0))
                    && filter
                        .since_us
                        .is_none_or(|s| last.get(u).is_some_and(|&t| t >= s))
                    && filter
                        .until_us
                        .is_none_or(|s| first.get(u).is_some_and(|&t| t < s))
            };
            let fast = match candidates {
                Some(c) => seg.bit_view()?.map(|b| (b, c)),
                None => None,
            };
            for (unit, score) in top_in(&view, fast, q, n, &keep, threads) {
                if score >= min_score {
                    best.push((score, si, unit));
                }
            }
            best.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
            best.truncate(n);
        }
        best.into_iter()
            .map(|(score, si, u)| {
                let seg = &self.segments[si];
                let c = *seg.cast::<u32>(4)?.get(u).ok_or(Corrupt)? as usize;
                let (source, conversation_id) = seg.conversation(c)?;
                Ok(UnitHit {
                    score,
                    source: source.to_owned(),
                    conversation_id: conversation_id.to_owned(),
                    messages: seg.unit_messages(u)?,
                })
            })
            .collect()
    }
}

/// The conversation numbers of `seg` the source / conversation filters keep (`None`:
/// all).
fn conversation_mask(seg: &Segment, filter: &Filter<'_>) -> Result<Option<HashSet<u32>>, Corrupt> {
    if filter.source.is_none() && filter.conversation_id.is_none() {
        return Ok(None);
    }
    let mut keep = HashSet::new();
    for c in 0..seg.conversations() {
        let (s, id) = seg.conversation(c)?;
        if filter.source.is_none_or(|f| f == s) && filter.conversation_id.is_none_or(|f| f == id) {
            keep.insert(u32::try_from(c).unwrap_or(u32::MAX));
        }
    }
    Ok(Some(keep))
}

/// The top `n` (unit, exact score) of one segment among the units `keep` accepts, on
/// up to `threads` slices of the segment at once. Without `fast`: the 8-bit pruned
/// pass (each slice exact on its own, so their merge is), or every exact value when
/// pruning cannot be proven. With `fast = (bit view, c)`: the `c` best units of each
/// slice by the 1-bit estimate, re-scored exactly (every exact value when the query
/// cannot be prepared).
fn top_in(
    view: &View<'_>,
    fast: Option<(BitView<'_>, usize)>,
    q: &[f32],
    n: usize,
    keep: &(impl Fn(usize) -> bool + Sync),
    threads: usize,
) -> Vec<(usize, f32)> {
    let units = view.len();
    let parts = threads.clamp(1, 8).min(units.div_ceil(65_536)).max(1);
    let per = units.div_ceil(parts).max(1);
    let slice = |p: usize| -> Vec<(usize, f32)> {
        let (a, b) = (p * per, ((p + 1) * per).min(units));
        let d = view.dim;
        let part = View {
            dim: d,
            codes: &view.codes[a * d..b * d],
            scale: &view.scale[a..b],
            err_row: &view.err_row[a..b],
            err_query: &view.err_query[a..b],
        };
        let keep_local = |s: usize| keep(a + s);
        if let Some((bv, c)) = fast {
            let w = bits::words(d);
            let bpart = BitView {
                dim: d,
                bits: bv.bits.get(a * w..b * w).unwrap_or_default(),
                factor: bv.factor.get(a..b).unwrap_or_default(),
                centroid: bv.centroid,
            };
            if let (Some(bq), Some(q8)) = (bpart.query(q), part.query(q)) {
                let picked = bpart.top(&bq, c, keep_local);
                let mut found = rescore(&part, &q8, q, n, &picked);
                for f in &mut found {
                    f.0 += a;
                }
                return found;
            }
        }
        let found = vectors::top_dots(&part, q, n, keep_local, |s| exact_dot(&part, q, s))
            .map(|(_, found)| found)
            .unwrap_or_else(|| {
                (0..part.len())
                    .filter(|&s| keep(a + s))
                    .map(|s| (s, exact_dot(&part, q, s)))
                    .collect()
            });
        let mut found: Vec<(usize, f32)> = found.into_iter().map(|(s, d)| (a + s, d)).collect();
        found.sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(&y.0)));
        found.truncate(n);
        found
    };
    let mut all: Vec<(usize, f32)> = if parts == 1 {
        slice(0)
    } else {
        std::thread::scope(|scope| {
            let handles: Vec<_> = (1..parts).map(|p| scope.spawn(move || slice(p))).collect();
            let mut all = slice(0);
            for h in handles {
                all.extend(h.join().unwrap_or_default());
            }
            all
        })
    };
    all.sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(&y.0)));
    all.truncate(n);
    all
}

/// The `n` best of the candidate slots `picked` of `part` by exact score, best first
/// (ties: slot order): the same as computing every candidate's exact score, but only
/// those whose 8-bit interval ([`View::interval`]) can reach the n-th best are
/// computed, highest upper end first.
fn rescore(
    part: &View<'_>,
    q8: &quantized::Query,
    q: &[f32],
    n: usize,
    picked: &[(u32, f32)],
) -> Vec<(usize, f32)> {
    let len = part.len();
    let mut bounds: Vec<(f64, f64, usize)> = picked
        .iter()
        .map(|&(s, _)| s as usize)
        .filter(|&s| s < len)
        .map(|s| {
            let (lo, hi) = part.interval(q8, s);
            (lo, hi, s)
        })
        .collect();
    let theta = if bounds.len() >= n && n > 0 {
        let mut lows: Vec<f64> = bounds.iter().map(|b| b.0).collect();
        lows.select_nth_unstable_by(n - 1, |x, y| y.total_cmp(x));
        lows[n - 1]
    } else {
        f64::NEG_INFINITY
    };
    bounds.retain(|b| b.1 >= theta);
    bounds.sort_unstable_by(|x, y| y.1.total_cmp(&x.1));
    let mut found: Vec<(usize, f32)> = Vec::new();
    for (_, hi, s) in bounds {
        if found.len() >= n {
            found.sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(&y.0)));
            found.truncate(n);
            if hi < f64::from(found[n - 1].1) {
                break;
            }
        }
        found.push((s, exact_dot(part, q, s)));
    }
    found.sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(&y.0)));
    found.truncate(n);
    found
}

/// The live units of the segments `parts` in `dir`, in order, gathered into one
/// builder (codes copied, nothing re-embedded); `path` names the merged file in errors.
fn merged(
    dir: &Path,
    dim: usize,
    parts: &[SegmentEntry],
    path: &Path,
) -> Result<Builder, IndexError> {
    let bad = |_| {
        IndexError::Mismatch(format!(
            "a segment merged into {} is damaged",
            path.display()
        ))
    };
    let mut builder = Builder::new(dim);
    for e in parts {
        let dead = match &e.tombstones {
            Some(t) => {
                read_tombstones(&dir.join(t), e.units as usize).map_err(IndexError::Mismatch)?
            }
            None => Vec::new(),
        };
        let seg = Segment::open(&dir.join(&e.file), dead).map_err(IndexError::Mismatch)?;
        let view = seg.view().map_err(bad)?;
        let conv: &[u32] = seg.cast(4).map_err(bad)?;
        let mut renumber: HashMap<u32, u32> = HashMap::new();
        for u in 0..seg.units {
            if seg.is_dead(u) {
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

/// Opened embeddings kept across calls of a long-running process: reopened only when
/// the manifest or the store's files changed.
#[derive(Debug, Default)]
pub struct Cache {
    held: Mutex<Option<(CacheKey, Arc<Embeddings>)>>,
}

type CacheKey = (PathBuf, Option<FileStamp>, StoreStamp);

impl Cache {
    /// The embeddings of the store at `db`, as [`Embeddings::open`] gives them.
    ///
    /// # Errors
    /// [`Unavailable`].
    pub fn get(&self, db: &Path) -> Result<Arc<Embeddings>, Unavailable> {
        let key = (
            db.to_path_buf(),
            FileStamp::of(&dir_of(db).join(MANIFEST)),
            StoreStamp::of(db),
        );
        let mut held = self
            .held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((k, e)) = held.as_ref() {
            if *k == key {
                return Ok(e.clone());
            }
        }
        *held = None;
        let e = Arc::new(Embeddings::open(db)?);
        *held = Some((key, e.clone()));
        Ok(e)
    }
}

// ---------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------

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

/// Called with (messages embedded so far, messages to embed) while writing.
pub type Progress<'a> = &'a mut dyn FnMut(u64, u64);

/// The writer side, held by a writable store (under the search index's lock).
pub struct Writer {
    dir: PathBuf,
    db: PathBuf,
    embedder: Arc<Embedder>,
    unit: UnitSpec,
    /// The manifest when the store was opened, if it matched the store, model and unit.
    base: Option<Manifest>,
    base_reason: Option<String>,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("dir", &self.dir)
            .field("unit", &self.unit)
            .finish_non_exhaustive()
    }
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> IndexError + '_ {
    move |source| IndexError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The embeddings manifest as a writable open found it, read before the database was
/// opened (so its stamp is compared with the database as the last writer left it).
#[derive(Debug, Clone)]
pub struct Base(Result<Manifest, String>);

impl Base {
    /// Reads the manifest of the store at `db` and checks it against the store.
    pub fn read(db: &Path) -> Self {
        Self(match Manifest::read(&dir_of(db)) {
            Ok(m) if m.store != StoreStamp::of(db) => {
                Err("the embeddings are older than the store".to_owned())
            }
            Ok(m) => Ok(m),
            Err(Unavailable::Missing) => Err("no embeddings yet".to_owned()),
            Err(e) => Err(e.to_string()),
        })
    }
}

impl Writer {
    /// A writer for the store at `db` over the manifest `base` found, embedding with
    /// `embedder` into units cut as `unit`.
    ///
    /// # Errors
    /// [`IndexError::Io`] when the folder cannot be created.
    pub fn begin(
        db: &Path,
        base: Base,
        embedder: Arc<Embedder>,
        unit: UnitSpec,
    ) -> Result<Self, IndexError> {
        let dir = dir_of(db);
        std::fs::create_dir_all(&dir).map_err(io_err(&dir))?;
        let (base, base_reason) = match base.0 {
            Err(why) => (None, Some(why)),
            Ok(m) if m.model != embedder.name() || m.dim as usize != embedder.dim() => (
                None,
                Some(format!(
                    "model changed: `{}` ({} dimensions) → `{}` ({})",
                    m.model,
                    m.dim,
                    embedder.name(),
                    embedder.dim()
                )),
            ),
            Ok(m) if m.unit != unit => (None, Some("unit changed".to_owned())),
            Ok(m) => (Some(m), None),
        };
        Ok(Self {
            dir,
            db: db.to_path_buf(),
            embedder,
            unit,
            base,
            base_reason,
        })
    }

    /// Brings the embeddings up to date with the table through `conn`, given the
    /// conversations this session changed; returns the manifest to publish once the
    /// database is closed ([`Writer::publish`]).
    ///
    /// # Errors
    /// [`IndexError`] when the table cannot be read or a file cannot be written.
    pub fn update(
        &self,
        conn: &duckdb::Connection,
        touched: &Touched,
        progress: Progress<'_>,
    ) -> Result<(Manifest, EmbedReport), IndexError> {
        let (base, only, reason) = match &self.base {
            Some(m) => (Some(m.clone()), Some(touched), None),
            None => (None, None, self.base_reason.clone()),
        };
        let mut next = first_free(&self.dir, base.as_ref().map_or(1, |m| m.next_file));
        let mut entries: Vec<SegmentEntry> = Vec::new();
        if let (Some(base), Some(touched)) = (&base, only) {
            for e in &base.segments {
                let mut e = e.clone();
                if !touched.is_empty() {
                    let dead = match &e.tombstones {
                        Some(t) => read_tombstones(&self.dir.join(t), e.units as usize)
                            .map_err(IndexError::Mismatch)?,
                        None => vec![0u64; (e.units as usize).div_ceil(64)],
                    };
                    let seg = Segment::open(&self.dir.join(&e.file), dead)
                        .map_err(IndexError::Mismatch)?;
                    let mut dead = seg.dead.clone();
                    let masked = mask(&seg, touched, &mut dead)?;
                    if masked > 0 {
                        let name = next_name(&mut next, "del");
                        write_synced(&self.dir.join(&name), bytemuck::cast_slice(&dead))?;
                        e.tombstones = Some(name);
                        e.live -= masked;
                    }
                }
                if e.live > 0 {
                    entries.push(e);
                }
            }
        }
        let mut embedded = 0;
        let mut units_written = 0;
        if only.is_none_or(|t| !t.is_empty()) {
            let file = next_name(&mut next, "vec");
            let (units, messages, bytes) =
                self.build_from_table(conn, only, &self.dir.join(&file), progress)?;
            embedded = messages;
            units_written += units;
            if units > 0 {
                entries.push(SegmentEntry {
                    file,
                    units,
                    live: units,
                    bytes,
                    tombstones: None,
                });
            }
        }
        // A segment of an older format (no 1-bit sections) is rewritten once.
        if entries.len() > MAX_SEGMENTS
            || entries.iter().any(|e| e.live * 2 < e.units)
            || entries
                .iter()
                .any(|e| segment_version(&self.dir.join(&e.file)).is_some_and(|v| v < VERSION))
        {
            let file = next_name(&mut next, "vec");
            let (units, bytes) = self.merge(&entries, &self.dir.join(&file))?;
            units_written += units;
            entries = if units > 0 {
                vec![SegmentEntry {
                    file,
                    units,
                    live: units,
                    bytes,
                    tombstones: None,
                }]
            } else {
                Vec::new()
            };
        }
        let manifest = Manifest {
            version: MANIFEST_VERSION,
            generation: base.as_ref().map_or(1, |m| m.generation + 1),
            next_file: next,
            model: self.embedder.name().to_owned(),
            dim: u32::try_from(self.embedder.dim()).unwrap_or(0),
            unit: self.unit,
            units: entries.iter().map(|e| e.live).sum(),
            segments: entries,
            store: StoreStamp {
                db: None,
                wal: None,
            },
        };
        let report = EmbedReport {
            rebuilt: base.is_none(),
            reason,
            messages_embedded: embedded,
            units_written,
            units: manifest.units,
            segments: manifest.segments.len(),
            bytes: manifest.segments.iter().map(|s| s.bytes).sum(),
            model: manifest.model.clone(),
        };
        Ok((manifest, report))
    }

    /// Embeds the messages of the table (of the `only` conversations, when given) and
    /// writes their units as a segment at `path`: (units, messages embedded, bytes).
    fn build_from_table(
        &self,
        conn: &duckdb::Connection,
        only: Option<&Touched>,
        path: &Path,
        progress: Progress<'_>,
    ) -> Result<(u64, u64, u64), IndexError> {
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

    /// Copies the live units of `parts` into one segment at `path`: (units, bytes).
    fn merge(&self, parts: &[SegmentEntry], path: &Path) -> Result<(u64, u64), IndexError> {
        let builder = merged(&self.dir, self.embedder.dim(), parts, path)?;
        let bytes = builder.write(path)?;
        Ok((builder.units() as u64, bytes))
    }

    /// Publishes `manifest` against the database as it is now (after it was
    /// checkpointed and closed), then removes files no manifest names.
    ///
    /// # Errors
    /// [`IndexError::Io`].
    pub fn publish(self, mut manifest: Manifest) -> Result<(), IndexError> {
        manifest.store = StoreStamp::of(&self.db);
        let tmp = self.dir.join("MANIFEST.tmp");
        let json = serde_json::to_vec_pretty(&manifest).unwrap_or_default();
        write_synced(&tmp, &json)?;
        let dest = self.dir.join(MANIFEST);
        std::fs::rename(&tmp, &dest).map_err(io_err(&dest))?;
        sync_dir(&self.dir)?;
        let keep: HashSet<&str> = manifest
            .segments
            .iter()
            .flat_map(|s| std::iter::once(s.file.as_str()).chain(s.tombstones.as_deref()))
            .chain([MANIFEST])
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

/// The format version in the header of the segment file at `path`, `None` when it
/// cannot be read (its open then reports why).
fn segment_version(path: &Path) -> Option<u32> {
    use std::io::Read;
    let mut head = [0u8; 12];
    std::fs::File::open(path).ok()?.read_exact(&mut head).ok()?;
    (&head[..8] == MAGIC).then(|| u32_at(&head, 8))
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
fn mask(seg: &Segment, touched: &Touched, dead: &mut [u64]) -> Result<u64, IndexError> {
    let bad = |_| IndexError::Mismatch("an embeddings segment is damaged".into());
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
        let (w, bit) = (u / 64, 1u64 << (u % 64));
        if dead[w] & bit == 0 && wanted.contains(c) {
            dead[w] |= bit;
            n += 1;
        }
    }
    Ok(n)
}

/// One stored unit as [`stored_vectors`] returns it: `(source, conversation_id, first
/// message id, v̂)`.
pub type StoredVector = (String, String, String, Vec<f32>);

/// The stored vector of every live unit, for tests, in file order.
///
/// # Errors
/// [`Unavailable`] as [`Embeddings::open`].
pub fn stored_vectors(db: &Path) -> Result<Vec<StoredVector>, Unavailable> {
    let e = Embeddings::open(db)?;
    let bad = |_| Unavailable::Corrupt("damaged segment".into());
    let mut out = Vec::new();
    for seg in &e.segments {
        let conv: &[u32] = seg.cast(4).map_err(bad)?;
        for (u, &c) in conv.iter().enumerate().take(seg.units) {
            if seg.is_dead(u) {
                continue;
            }
            let (s, id) = seg.conversation(c as usize).map_err(bad)?;
            let first = seg
                .unit_messages(u)
                .map_err(bad)?
                .first()
                .map(|m| m.message_id.clone())
                .unwrap_or_default();
            out.push((
                s.to_owned(),
                id.to_owned(),
                first,
                seg.vector(u).map_err(bad)?,
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_cover_every_message_once_or_by_stride() {
        let spec = |window, stride| UnitSpec {
            window,
            stride,
            title: false,
        };
        assert_eq!(spec(1, 1).windows(3), vec![(0, 1), (1, 2), (2, 3)]);
        assert_eq!(spec(3, 2).windows(6), vec![(0, 3), (2, 5), (4, 6)]);
        assert_eq!(spec(3, 2).windows(5), vec![(0, 3), (2, 5)]);
        assert_eq!(spec(4, 4).windows(2), vec![(0, 2)]);
        assert!(spec(3, 2).windows(0).is_empty());
    }

    #[test]
    fn a_segment_round_trips_and_search_finds_the_nearest_unit() {
        let tmp = tempfile::tempdir().unwrap();
        let dim = 8;
        let mut b = Builder::new(dim);
        let c = b.conversation("generic", "conv-1");
        let vecs: Vec<Vec<f32>> = (0..5)
            .map(|i| {
                let mut v = vec![0.1f32; dim];
                v[i] = 1.0;
                vectors::normalized(&v)
            })
            .collect();
        for (i, v) in vecs.iter().enumerate() {
            let mut codes = Vec::new();
            let code = quantized::encode(v, &mut codes).unwrap();
            let id = format!("m{i}");
            b.push(c, &codes, code, &[(id.as_str(), i as i64 * 10, role::USER)]);
        }
        let path = tmp.path().join("00000001.vec");
        b.write(&path).unwrap();
        let seg = Segment::open(&path, Vec::new()).unwrap();
        assert_eq!(seg.units, 5);
        assert_eq!(seg.conversation(0).unwrap(), ("generic", "conv-1"));
        assert_eq!(seg.unit_messages(3).unwrap()[0].message_id, "m3");
        let view = seg.view().unwrap();
        let top = top_in(&view, None, &vecs[2], 2, &|_| true, 2);
        assert_eq!(top[0].0, 2);
        let top = top_in(&view, None, &vecs[2], 1, &|u| u != 2, 1);
        assert_ne!(top[0].0, 2);
        // A truncated file is refused, not read past its end.
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 9]).unwrap();
        assert!(Segment::open(&path, Vec::new()).is_err());
    }

    /// Deterministic pseudo-random numbers in [0, 1).
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> f32 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            #[allow(clippy::cast_precision_loss)]
            let r = (self.0 >> 11) as f32 / (1u64 << 53) as f32;
            r
        }
    }

    /// A segment of `units` clustered unit vectors in `convs` conversations, roles
    /// and times varying, written in format `version`; returns the opened embeddings
    /// and the queries' source vectors.
    fn generated(dir: &Path, units: usize, version: u32) -> (Embeddings, Vec<Vec<f32>>) {
        let dim = 128;
        let mut rng = Rng(0x5EED_1234_5678_9ABC);
        let centers: Vec<Vec<f32>> = (0..40)
            .map(|_| (0..dim).map(|_| rng.next() - 0.3).collect())
            .collect();
        let mut b = Builder::new(dim);
        let convs = 50;
        let per = units.div_ceil(convs);
        let mut kept = Vec::new();
        let mut codes = Vec::new();
        for u in 0..units {
            if u % per == 0 {
                b.conversation("generic", &format!("conv-{}", u / per));
            }
            let c = &centers[(rng.next() * 40.0) as usize % 40];
            let v: Vec<f32> = c.iter().map(|x| x + 0.6 * (rng.next() - 0.5)).collect();
            let v = vectors::normalized(&v);
            codes.clear();
            let code = quantized::encode(&v, &mut codes).unwrap();
            let id = format!("m{u}");
            let r = [role::USER, role::ASSISTANT, role::OTHER][u % 3];
            b.push(
                u32::try_from(u / per).unwrap(),
                &codes,
                code,
                &[(id.as_str(), i64::try_from(u).unwrap() * 10, r)],
            );
            if u % 97 == 0 {
                kept.push(v);
            }
        }
        let file = format!("0000000{version}.vec");
        let bytes = b.write_as(&dir.join(&file), version).unwrap();
        let manifest = Manifest {
            version: MANIFEST_VERSION,
            generation: 1,
            next_file: 2,
            model: "test".into(),
            dim: dim as u32,
            unit: UnitSpec::DEFAULT,
            segments: vec![SegmentEntry {
                file: file.clone(),
                units: units as u64,
                live: units as u64,
                bytes,
                tombstones: None,
            }],
            units: units as u64,
            store: StoreStamp {
                db: None,
                wal: None,
            },
        };
        let mut dead = vec![0u64; units.div_ceil(64)];
        for u in (0..units).step_by(7) {
            dead[u / 64] |= 1 << (u % 64);
        }
        let seg = Segment::open(&dir.join(&file), dead).unwrap();
        let e = Embeddings {
            manifest,
            segments: vec![seg],
        };
        (e, kept)
    }

    fn key(h: &UnitHit) -> String {
        h.messages[0].message_id.clone()
    }

    #[test]
    fn the_one_bit_pass_agrees_with_the_exact_pass_under_filters() {
        let tmp = tempfile::tempdir().unwrap();
        let units = 140_000;
        let (e, queries) = generated(tmp.path(), units, VERSION);
        assert!(e.segments[0].has_bits);
        let stop = Cancel::new();
        let fast = FirstPass::Bits {
            min_units: 0,
            oversample: 20,
            floor: 2000,
        };
        let filters = [
            Filter::default(),
            Filter {
                roles: role::USER,
                ..Filter::default()
            },
            Filter {
                since_us: Some(200_000),
                until_us: Some(900_000),
                ..Filter::default()
            },
            Filter {
                conversation_id: Some("conv-3"),
                roles: role::ASSISTANT,
                ..Filter::default()
            },
        ];
        let n = 15;
        let (mut found, mut wanted) = (0usize, 0usize);
        for (qi, q) in queries.iter().enumerate().take(120) {
            let f = &filters[qi % filters.len()];
            let exact = e
                .search_with(q, n, f, -1.0, 2, &stop, FirstPass::Exact)
                .unwrap();
            let got = e.search_with(q, n, f, -1.0, 2, &stop, fast).unwrap();
            // As many results, every one passing the filters, scored exactly.
            assert_eq!(got.len(), exact.len());
            assert_eq!(exact.len(), n);
            for h in &got {
                let u: usize = h.messages[0].message_id[1..].parse().unwrap();
                assert!(!u.is_multiple_of(7), "a masked unit came back");
                let created = h.messages[0].created_us;
                assert!(f.since_us.is_none_or(|s| created >= s));
                assert!(f.until_us.is_none_or(|s| created < s));
                assert!(f.roles == 0 || role::bit(h.messages[0].role) & f.roles != 0);
                assert!(f.conversation_id.is_none_or(|c| c == h.conversation_id));
                let v = e.segments[0].vector(u).unwrap();
                let want: f32 = q.iter().zip(&v).map(|(a, b)| a * b).sum();
                assert!((h.score - want).abs() < 1e-5);
            }
            for w in got.windows(2) {
                assert!(w[0].score >= w[1].score);
            }
            let exact_keys: HashSet<String> = exact.iter().map(key).collect();
            found += got.iter().filter(|h| exact_keys.contains(&key(h))).count();
            wanted += exact.len();
        }
        let recall = found as f64 / wanted as f64;
        assert!(recall >= 0.99, "recall@15 of the 1-bit pass: {recall}");
        // The default keeps a store this small exact (below `BITS_MIN_UNITS`)...
        let tmp_small = tempfile::tempdir().unwrap();
        let small = generated(tmp_small.path(), 5_000, VERSION).0;
        let q = &queries[0];
        let a = small
            .search(q, n, &Filter::default(), -1.0, 2, &stop)
            .unwrap();
        let b = small
            .search_with(q, n, &Filter::default(), -1.0, 2, &stop, FirstPass::Exact)
            .unwrap();
        assert_eq!(a, b);
        // ...and a stopped call scores nothing more.
        stop.cancel();
        assert!(
            e.search_with(q, n, &Filter::default(), -1.0, 2, &stop, fast)
                .unwrap()
                .len()
                < n
        );
    }

    #[test]
    fn a_version_one_segment_is_read_and_searched_exactly() {
        let tmp = tempfile::tempdir().unwrap();
        let (old, queries) = generated(tmp.path(), 3_000, 1);
        assert!(!old.segments[0].has_bits);
        assert!(old.segments[0].bit_view().unwrap().is_none());
        let (new, _) = generated(tmp.path(), 3_000, VERSION);
        let v1 = std::fs::metadata(tmp.path().join("00000001.vec"))
            .unwrap()
            .len();
        let v2 = std::fs::metadata(tmp.path().join("00000002.vec"))
            .unwrap()
            .len();
        // 128 dimensions: two sign words and one factor per unit, the centroid, three
        // more table entries and up to 7 bytes of alignment.
        let added = 3_000 * 20 + 128 * 4 + 3 * 16;
        assert!((added..added + 8).contains(&(v2 - v1)), "{v1} → {v2}");
        assert_eq!(segment_version(&tmp.path().join("00000001.vec")), Some(1));
        let stop = Cancel::new();
        let always = FirstPass::Bits {
            min_units: 0,
            oversample: 1,
            floor: 1,
        };
        for q in &queries {
            let a = old
                .search_with(q, 10, &Filter::default(), -1.0, 2, &stop, always)
                .unwrap();
            let b = new
                .search_with(q, 10, &Filter::default(), -1.0, 2, &stop, FirstPass::Exact)
                .unwrap();
            assert_eq!(a, b);
        }
    }

    /// A store whose embeddings were written before the 1-bit sections: the next close
    /// of a writable store rewrites the segment in the current format (codes copied,
    /// nothing re-embedded), and search returns the same hits as before.
    #[test]
    fn the_next_close_rewrites_a_version_one_segment_with_bits() {
        use crate::bench::gen::{Generator, Spec};
        use crate::stores::conversations::ConversationStore;
        let Ok(embedder) = Embedder::load_default() else {
            eprintln!("skipped: no embedding model (run scripts/fetch-model)");
            return;
        };
        let embedder = Arc::new(embedder);
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("conversations.duckdb");
        let messages: Vec<_> = Generator::new(Spec {
            messages: 400,
            seed: 0x0bad,
        })
        .flatten()
        .collect();
        let mut store = ConversationStore::open_rw(&db).unwrap();
        store.insert(&messages).unwrap();
        store
            .embed_with(embedder.clone(), UnitSpec::DEFAULT)
            .unwrap();
        store.close_with(&mut |_, _| {}).unwrap();

        // Rewrite the one segment as version 1, as an older build left it.
        let dir = dir_of(&db);
        let mut manifest = Manifest::read(&dir).unwrap();
        assert_eq!(manifest.segments.len(), 1);
        let entry = &mut manifest.segments[0];
        let v2 = dir.join(&entry.file);
        let builder = merged(&dir, embedder.dim(), std::slice::from_ref(entry), &v2).unwrap();
        let old_name = "00000099.vec".to_owned();
        entry.bytes = builder.write_as(&dir.join(&old_name), 1).unwrap();
        entry.file = old_name.clone();
        std::fs::remove_file(&v2).unwrap();
        std::fs::write(dir.join(MANIFEST), serde_json::to_vec(&manifest).unwrap()).unwrap();
        assert_eq!(segment_version(&dir.join(&old_name)), Some(1));

        let q = embedder.embed("tokio runtime serde error");
        let stop = Cancel::new();
        let hits = |e: &Embeddings| {
            e.search_with(&q, 10, &Filter::default(), -1.0, 2, &stop, FirstPass::Exact)
                .unwrap()
        };
        let before = hits(&Embeddings::open(&db).unwrap());
        assert_eq!(before.len(), 10);

        let mut store = ConversationStore::open_rw(&db).unwrap();
        store
            .embed_with(embedder.clone(), UnitSpec::DEFAULT)
            .unwrap();
        let report = store.close_with(&mut |_, _| {}).unwrap();
        let r = report.embeddings.unwrap().unwrap();
        assert_eq!(r.messages_embedded, 0, "{r:?}");
        let after = Embeddings::open(&db).unwrap();
        let m = after.manifest();
        assert_eq!(m.segments.len(), 1);
        assert_ne!(m.segments[0].file, old_name);
        assert_eq!(
            segment_version(&dir.join(&m.segments[0].file)),
            Some(VERSION)
        );
        assert!(!dir.join(&old_name).exists());
        assert_eq!(hits(&after), before);
        let always = FirstPass::Bits {
            min_units: 0,
            oversample: 1,
            floor: 1_000,
        };
        let fast = after
            .search_with(&q, 10, &Filter::default(), -1.0, 2, &stop, always)
            .unwrap();
        assert_eq!(fast, before);
    }

    #[test]
    fn a_damaged_bit_section_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        generated(tmp.path(), 500, VERSION);
        let path = tmp.path().join("00000002.vec");
        let good = std::fs::read(&path).unwrap();
        for section in [15usize, 16, 17] {
            let mut bad = good.clone();
            let at = HEADER + section * 16 + 8;
            let len = u64_at(&bad, at) - 8;
            bad[at..at + 8].copy_from_slice(&len.to_le_bytes());
            std::fs::write(&path, &bad).unwrap();
            assert!(
                Segment::open(&path, Vec::new()).is_err(),
                "section {section}"
            );
        }
        let mut bad = good.clone();
        bad[36..40].copy_from_slice(&15u32.to_le_bytes());
        std::fs::write(&path, &bad).unwrap();
        assert!(Segment::open(&path, Vec::new()).is_err());
    }
}
