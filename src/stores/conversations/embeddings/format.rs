//! The L1 embeddings' segment file: its layout, its writer ([`Builder`]) and its
//! memory-mapped reader ([`Segment`]), side by side so they cannot drift.

use std::path::Path;

use super::role;
use crate::search::bits::{self, BitView};
use crate::search::quantized::{self, View};
use crate::search::scan::Corrupt;
use crate::stores::segments::{u32_at, u64_at, write_synced, SetError};

pub(super) const MAGIC: &[u8; 8] = b"SKILLSCV";
/// Segment format written: 2 adds the 1-bit sections (15–17) to version 1's.
pub(super) const VERSION: u32 = 2;
/// Sections of a version-1 segment (still read; searched by the exact pass only).
const SECTIONS_V1: usize = 15;
const BOM: u32 = 0x0102_0304;
pub(super) const HEADER: usize = 64;
const SECTIONS: usize = 18;

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
pub(super) struct Builder {
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
    pub(super) fn new(dim: usize) -> Self {
        Self {
            dim,
            unit_msgs: vec![0],
            msg_off: vec![0],
            conv_off: vec![0],
            ..Self::default()
        }
    }

    pub(super) fn units(&self) -> usize {
        self.scale.len()
    }

    /// Starts a new conversation; returns its number in this segment.
    pub(super) fn conversation(&mut self, source: &str, conversation_id: &str) -> u32 {
        self.conv_bytes.extend_from_slice(source.as_bytes());
        self.conv_bytes.push(0);
        self.conv_bytes
            .extend_from_slice(conversation_id.as_bytes());
        self.conv_off.push(self.conv_bytes.len() as u64);
        u32::try_from(self.conv_off.len() - 2).unwrap_or(u32::MAX)
    }

    /// Adds a unit whose stored vector is `code` (scale and factors of [`quantized::encode`]).
    pub(super) fn push(
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

    pub(super) fn write(&self, path: &Path) -> Result<u64, SetError> {
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
    pub(super) fn write_as(&self, path: &Path, version: u32) -> Result<u64, SetError> {
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
pub struct Segment {
    map: memmap2::Mmap,
    pub(super) units: usize,
    messages: usize,
    pub(super) dim: usize,
    /// (offset, length) of each section; sections 15–17 are (0, 0) in a version-1 file.
    sections: [(usize, usize); SECTIONS],
    /// True when the file holds the 1-bit sections (version 2).
    pub(super) has_bits: bool,
}

impl Segment {
    pub(super) fn open(path: &Path) -> Result<Self, String> {
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
        Ok(Self {
            map,
            units,
            messages,
            dim,
            sections,
            has_bits,
        })
    }

    /// The 1-bit sections, `None` in a version-1 file.
    pub(super) fn bit_view(&self) -> Result<Option<BitView<'_>>, Corrupt> {
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

    pub(super) fn bytes(&self, i: usize) -> &[u8] {
        let (off, len) = self.sections[i];
        &self.map[off..off + len]
    }

    pub(super) fn cast<T: bytemuck::Pod>(&self, i: usize) -> Result<&[T], Corrupt> {
        bytemuck::try_cast_slice(self.bytes(i)).map_err(|_| Corrupt)
    }

    pub(super) fn view(&self) -> Result<View<'_>, Corrupt> {
        Ok(View {
            dim: self.dim,
            codes: self.cast(0)?,
            scale: self.cast(1)?,
            err_row: self.cast(2)?,
            err_query: self.cast(3)?,
        })
    }

    /// String `i` of the table in sections `off`, `off + 1`.
    pub(super) fn string(&self, off: usize, i: usize) -> Result<&str, Corrupt> {
        let offsets: &[u64] = self.cast(off)?;
        let bytes = self.bytes(off + 1);
        let (a, b) = (
            *offsets.get(i).ok_or(Corrupt)? as usize,
            *offsets.get(i + 1).ok_or(Corrupt)? as usize,
        );
        let s = bytes.get(a..b).ok_or(Corrupt)?;
        std::str::from_utf8(s).map_err(|_| Corrupt)
    }

    pub(super) fn conversations(&self) -> usize {
        self.sections[13].1 / 8 - 1
    }

    /// (`source`, `conversation_id`) of conversation `c`.
    pub(super) fn conversation(&self, c: usize) -> Result<(&str, &str), Corrupt> {
        self.string(13, c)?.split_once('\0').ok_or(Corrupt)
    }

    /// The message range of unit `u`.
    pub(super) fn unit_range(&self, u: usize) -> Result<(usize, usize), Corrupt> {
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

    pub(super) fn unit_messages(&self, u: usize) -> Result<Vec<UnitMessage>, Corrupt> {
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

    /// Unit `u`'s stored vector `v̂ = s · c` (tests read the stored vectors).
    #[cfg(test)]
    pub(super) fn vector(&self, u: usize) -> Result<Vec<f32>, Corrupt> {
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
pub(super) fn exact_dot(view: &View<'_>, q: &[f32], slot: usize) -> f32 {
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

/// The format version in the header of the segment file at `path`, `None` when it
/// cannot be read (its open then reports why).
pub(super) fn segment_version(path: &Path) -> Option<u32> {
    use std::io::Read;
    let mut head = [0u8; 12];
    std::fs::File::open(path).ok()?.read_exact(&mut head).ok()?;
    (&head[..8] == MAGIC).then(|| u32_at(&head, 8))
}
