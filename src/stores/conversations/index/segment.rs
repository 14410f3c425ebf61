//! One immutable segment file of the conversations search index: rows in search order
//! (`created DESC, source, conversation_id, message_id`), stored as columns that are
//! used straight from a memory map, with no parse step.
//!
//! ## On-disk format (version 4, little-endian)
//!
//! ```text
//! offset 0   magic "SKILLSCI"                      8 bytes
//!        8   format version (4; 3, 2, 1 are read)  u32
//!       12   byte-order mark 0x01020304            u32
//!       16   rows n                                u64
//!       24   rows per filter block                 u32
//!       28   number of sections (26 v3+; 23 v2; 18) u32
//!       32   words of all rows (v2; zero in v1)    u64
//!       40   reserved, zero                        24 bytes
//!       64   section table: (offset u64, length u64) per section, in the order below
//!     then   the sections, each starting at a multiple of 8
//! ```
//!
//! | # | section | type | content |
//! |---|---|---|---|
//! | 0 | created | `i64[n]` | microseconds since the Unix epoch (UTC) |
//! | 1 | flags | `u8[n]` | bit 0: `has_question = 1`; bit 1: `is_injected IS FALSE` |
//! | 2 | role | `u8[n]` | index into the role dictionary |
//! | 3 | source | `u16[n]` | index into the source dictionary |
//! | 4 | conversation | `u32[n]` | index into the conversation-id dictionary |
//! | 5, 6 | role dictionary | `u64[r+1]`, bytes | sorted distinct roles |
//! | 7, 8 | source dictionary | `u64[s+1]`, bytes | sorted distinct sources |
//! | 9, 10 | conversation dictionary | `u64[c+1]`, bytes | sorted distinct conversation ids |
//! | 11, 12 | message ids | `u64[n+1]`, bytes | per row |
//! | 13, 14 | folded text | `u64[n+1]`, bytes | `content` lowercased as DuckDB does ([`fold`]) |
//! | 15, 16 | case exceptions | `u64[n+1]`, bytes | how to restore the first 200 characters ([`fold_with_case`]) |
//! | 17 | filter | `u64[blocks × 1024]` | 4-gram bit set per block of rows ([`Filter`]) |
//! | 18, 19 | terms (v2) | `u64[t+1]`, bytes | sorted distinct terms of the folded text ([`postings`]): stems from v4, words as written before |
//! | 20, 21 | term lists (v2) | `u64[t+1]`, bytes | each term's rows and frequencies, varint-coded ([`postings`]) |
//! | 22 | row lengths (v2) | `u16[n]` | words per row, saturated ([`postings`]) |
//! | 23 | project (v3) | `u32[n]` | index into the project dictionary; `u32::MAX` when `project` is NULL |
//! | 24, 25 | project dictionary (v3) | `u64[p+1]`, bytes | sorted distinct projects |
//!
//! Version 4 is version 3 with stemmed terms ([`crate::search::words::stem`]). Older
//! files are still read: [`Segment::postings`] is `None` before version 4 (their terms
//! are words as written, which stemmed queries would miss), [`Segment::has_projects`]
//! false before version 3; the next ingest rewrites them ([`Segment::version`]): a
//! version 3 file by merging (its postings are built again), older ones from the table.
//!
//! A string table is an offsets array (`u64`, one more than entries, starting at 0)
//! and the concatenated UTF-8 bytes. Nothing in a file is trusted: every access is
//! bounds-checked and a bad one is [`SegmentError::Corrupt`], never a panic.
//!
//! [`fold`]: crate::search::scan::fold
//! [`fold_with_case`]: crate::search::scan::fold_with_case
//! [`Filter`]: crate::search::scan::Filter
//! [`postings`]: crate::search::postings
//!
//! Kept in one file: the file format's writer and reader sit side by side so the layout
//! cannot drift between them.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use crate::search::postings::{self, Postings};
use crate::search::scan::{self, Corrupt, Filter, Texts, BLOCK_WORDS};
use crate::stores::segments::{u32_at, u64_at};

/// File magic.
pub const MAGIC: &[u8; 8] = b"SKILLSCI";
/// Format version written ([`VERSION_3`], [`VERSION_2`] and [`VERSION_1`] are read
/// too): stemmed postings.
pub const VERSION: u32 = 4;
/// The third format version: project column, postings of words as written.
pub const VERSION_3: u32 = 3;
/// The second format version: postings, no project column.
pub const VERSION_2: u32 = 2;
/// The first format version: no postings.
pub const VERSION_1: u32 = 1;
const BOM: u32 = 0x0102_0304;
const HEADER: usize = 64;
/// Sections of a version 3 or 4 file.
const SECTIONS: usize = 26;
/// Sections of a version 2 file.
const SECTIONS_V2: usize = 23;
/// Sections of a version 1 file.
const SECTIONS_V1: usize = 18;
/// Rows per filter block (see docs/performance.md: 4-grams over 256 rows).
pub const ROWS_PER_BLOCK: usize = 256;
/// Characters of `content` a row's preview shows (and its case exceptions cover).
pub const PREVIEW_CHARS: usize = 200;

/// Flag bit: `has_question = 1`.
pub const HAS_QUESTION: u8 = 1;
/// Flag bit: `is_injected IS FALSE` (the row counts as typed by the user).
pub const NOT_INJECTED: u8 = 2;

mod sec {
    pub const CREATED: usize = 0;
    pub const FLAGS: usize = 1;
    pub const ROLE: usize = 2;
    pub const SOURCE: usize = 3;
    pub const CONV: usize = 4;
    pub const ROLES: usize = 5;
    pub const SOURCES: usize = 7;
    pub const CONVS: usize = 9;
    pub const MSG: usize = 11;
    pub const TEXT: usize = 13;
    pub const CASE: usize = 15;
    pub const FILTER: usize = 17;
    pub const TERMS: usize = 18;
    pub const LISTS: usize = 20;
    pub const LENGTHS: usize = 22;
    pub const PROJECT: usize = 23;
    pub const PROJECTS: usize = 24;
}

/// The project index of a row whose `project` is NULL.
pub const NO_PROJECT: u32 = u32::MAX;

/// Errors reading or writing a segment.
#[derive(Debug, thiserror::Error)]
pub enum SegmentError {
    /// The file is not a segment this version wrote, or is damaged.
    #[error("index segment `{path}`: {reason}")]
    Corrupt {
        /// The segment file.
        path: String,
        /// What did not fit.
        reason: String,
    },
    /// Rows did not arrive in search order, or a dictionary overflowed.
    #[error("index segment: {0}")]
    Input(String),
    /// Filesystem error.
    #[error("index segment `{path}`: {source}")]
    Io {
        /// The segment file.
        path: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

/// One row offered to a [`SegmentBuilder`].
#[derive(Debug, Clone, Copy)]
pub struct RowIn<'a> {
    /// `created`, microseconds since the Unix epoch.
    pub created_us: i64,
    /// `source`.
    pub source: &'a str,
    /// `conversation_id`.
    pub conversation_id: &'a str,
    /// `message_id`.
    pub message_id: &'a str,
    /// `role`.
    pub role: &'a str,
    /// `project` (`None`: NULL).
    pub project: Option<&'a str>,
    /// [`HAS_QUESTION`] | [`NOT_INJECTED`].
    pub flags: u8,
    /// Folded `content` ([`scan::fold`]).
    pub folded: &'a [u8],
    /// Case exceptions of its first [`PREVIEW_CHARS`] characters ([`scan::fold_with_case`]).
    pub case: &'a [u8],
}

/// Search order of two rows: newest first, then `source`, `conversation_id`,
/// `message_id` ascending (DuckDB's `VARCHAR` order is byte order, as `str`'s).
pub fn order(a: (i64, &str, &str, &str), b: (i64, &str, &str, &str)) -> Ordering {
    b.0.cmp(&a.0)
        .then_with(|| a.1.cmp(b.1))
        .then_with(|| a.2.cmp(b.2))
        .then_with(|| a.3.cmp(b.3))
}

/// 64-bit FNV-1a of a row's key (`source`, `conversation_id`, `message_id`, separated
/// by NUL); the index stamp XORs them over all live rows.
pub fn key_hash(source: &str, conversation_id: &str, message_id: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (i, part) in [source, conversation_id, message_id].iter().enumerate() {
        if i > 0 {
            // The NUL separator: XOR with 0 changes nothing, the multiply remains.
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        for b in part.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// Distinct strings in first-seen order, remapped to sorted order when written.
#[derive(Default)]
struct Dict {
    ids: HashMap<String, u32>,
    strings: Vec<String>,
}

impl Dict {
    fn id(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = u32::try_from(self.strings.len()).unwrap_or(u32::MAX);
        self.ids.insert(s.to_owned(), id);
        self.strings.push(s.to_owned());
        id
    }

    /// (sorted strings, map from first-seen id to sorted id).
    fn sorted(self) -> (Vec<String>, Vec<u32>) {
        let mut order: Vec<u32> = (0..u32::try_from(self.strings.len()).unwrap_or(0)).collect();
        order.sort_by(|&a, &b| self.strings[a as usize].cmp(&self.strings[b as usize]));
        let mut remap = vec![0u32; order.len()];
        for (new, &old) in order.iter().enumerate() {
            remap[old as usize] = u32::try_from(new).unwrap_or(u32::MAX);
        }
        let mut strings = self.strings;
        let sorted = order
            .iter()
            .map(|&old| std::mem::take(&mut strings[old as usize]))
            .collect();
        (sorted, remap)
    }
}

/// What a written segment holds (recorded in the manifest).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    /// Rows.
    pub rows: u64,
    /// File length in bytes.
    pub bytes: u64,
    /// CRC-32 of the whole file.
    pub crc32: u32,
    /// Newest `created` (µs), `i64::MIN` when empty.
    pub max_created_us: i64,
    /// XOR of [`key_hash`] over the rows.
    pub key_xor: u64,
}

/// Collects rows in search order and writes them as one segment file.
#[derive(Default)]
pub struct SegmentBuilder {
    created: Vec<i64>,
    flags: Vec<u8>,
    role: Vec<u32>,
    source: Vec<u32>,
    conv: Vec<u32>,
    project: Vec<u32>,
    projects: Dict,
    roles: Dict,
    sources: Dict,
    convs: Dict,
    msg: Vec<u8>,
    msg_offs: Vec<u64>,
    text: Vec<u8>,
    text_offs: Vec<u64>,
    case: Vec<u8>,
    case_offs: Vec<u64>,
    last: Option<(i64, u32, u32, String)>,
    key_xor: u64,
}

impl SegmentBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self {
            msg_offs: vec![0],
            text_offs: vec![0],
            case_offs: vec![0],
            ..Self::default()
        }
    }

    /// Rows so far.
    pub fn len(&self) -> usize {
        self.created.len()
    }

    /// True before the first row.
    pub fn is_empty(&self) -> bool {
        self.created.is_empty()
    }

    /// Appends one row; rows must come in search order ([`order`]) with distinct keys.
    ///
    /// # Errors
    /// [`SegmentError::Input`] when a row sorts before the previous one.
    pub fn push(&mut self, row: &RowIn<'_>) -> Result<(), SegmentError> {
        if let Some((created, source, conv, msg)) = &self.last {
            let prev = (
                *created,
                self.sources.strings[*source as usize].as_str(),
                self.convs.strings[*conv as usize].as_str(),
                msg.as_str(),
            );
            let this = (
                row.created_us,
                row.source,
                row.conversation_id,
                row.message_id,
            );
            if order(prev, this) != Ordering::Less {
                return Err(SegmentError::Input(format!(
                    "rows out of search order at {}/{}/{}",
                    row.source, row.conversation_id, row.message_id
                )));
            }
        }
        let source = self.sources.id(row.source);
        let conv = self.convs.id(row.conversation_id);
        let role = self.roles.id(row.role);
        let project = row.project.map_or(NO_PROJECT, |p| self.projects.id(p));
        self.project.push(project);
        self.created.push(row.created_us);
        self.flags.push(row.flags);
        self.role.push(role);
        self.source.push(source);
        self.conv.push(conv);
        self.msg.extend_from_slice(row.message_id.as_bytes());
        self.msg_offs.push(self.msg.len() as u64);
        self.text.extend_from_slice(row.folded);
        self.text_offs.push(self.text.len() as u64);
        self.case.extend_from_slice(row.case);
        self.case_offs.push(self.case.len() as u64);
        self.key_xor ^= key_hash(row.source, row.conversation_id, row.message_id);
        self.last = Some((row.created_us, source, conv, row.message_id.to_owned()));
        Ok(())
    }

    /// Writes the segment to `path` (created; fsynced before returning).
    ///
    /// # Errors
    /// [`SegmentError::Io`]; [`SegmentError::Input`] with more than 255 roles or
    /// 65,535 sources.
    pub fn write(self, path: &Path) -> Result<Written, SegmentError> {
        let io = |source| SegmentError::Io {
            path: path.display().to_string(),
            source,
        };
        let (roles, role_map) = self.roles.sorted();
        let (sources, source_map) = self.sources.sorted();
        let (convs, conv_map) = self.convs.sorted();
        let (projects, project_map) = self.projects.sorted();
        if roles.len() > 255 || sources.len() > 65_535 {
            return Err(SegmentError::Input(format!(
                "{} roles, {} sources: more than the format holds",
                roles.len(),
                sources.len()
            )));
        }
        #[allow(clippy::cast_possible_truncation)] // checked above
        let role: Vec<u8> = self
            .role
            .iter()
            .map(|&r| role_map[r as usize] as u8)
            .collect();
        #[allow(clippy::cast_possible_truncation)] // checked above
        let source: Vec<u16> = self
            .source
            .iter()
            .map(|&s| source_map[s as usize] as u16)
            .collect();
        let conv: Vec<u32> = self.conv.iter().map(|&c| conv_map[c as usize]).collect();
        let project: Vec<u32> = self
            .project
            .iter()
            .map(|&p| {
                if p == NO_PROJECT {
                    NO_PROJECT
                } else {
                    project_map[p as usize]
                }
            })
            .collect();
        let table = |strings: &[String]| {
            let mut offs = vec![0u64];
            let mut bytes = Vec::new();
            for s in strings {
                bytes.extend_from_slice(s.as_bytes());
                offs.push(bytes.len() as u64);
            }
            (offs, bytes)
        };
        let (role_offs, role_bytes) = table(&roles);
        let (source_offs, source_bytes) = table(&sources);
        let (conv_offs, conv_bytes) = table(&convs);
        let (project_offs, project_bytes) = table(&projects);
        let texts = Texts {
            text: &self.text,
            offsets: &self.text_offs,
        };
        let filter = Filter::build(&texts, ROWS_PER_BLOCK)
            .map_err(|Corrupt| SegmentError::Input("text offsets".into()))?;
        let posted = postings::build(&texts)
            .map_err(|Corrupt| SegmentError::Input("text offsets or UTF-8".into()))?;
        let sections: [&[u8]; SECTIONS] = [
            bytemuck::cast_slice(&self.created),
            &self.flags,
            &role,
            bytemuck::cast_slice(&source),
            bytemuck::cast_slice(&conv),
            bytemuck::cast_slice(&role_offs),
            &role_bytes,
            bytemuck::cast_slice(&source_offs),
            &source_bytes,
            bytemuck::cast_slice(&conv_offs),
            &conv_bytes,
            bytemuck::cast_slice(&self.msg_offs),
            &self.msg,
            bytemuck::cast_slice(&self.text_offs),
            &self.text,
            bytemuck::cast_slice(&self.case_offs),
            &self.case,
            bytemuck::cast_slice(&filter),
            bytemuck::cast_slice(&posted.term_offsets),
            &posted.terms,
            bytemuck::cast_slice(&posted.list_offsets),
            &posted.lists,
            bytemuck::cast_slice(&posted.lengths),
            bytemuck::cast_slice(&project),
            bytemuck::cast_slice(&project_offs),
            &project_bytes,
        ];
        let mut header = Vec::with_capacity(HEADER + SECTIONS * 16);
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&VERSION.to_le_bytes());
        header.extend_from_slice(&BOM.to_le_bytes());
        header.extend_from_slice(&(self.created.len() as u64).to_le_bytes());
        header.extend_from_slice(&(ROWS_PER_BLOCK as u32).to_le_bytes());
        header.extend_from_slice(&(SECTIONS as u32).to_le_bytes());
        header.extend_from_slice(&posted.total_length.to_le_bytes());
        header.resize(HEADER, 0);
        let mut at = (HEADER + SECTIONS * 16) as u64;
        for s in &sections {
            at = at.div_ceil(8) * 8;
            header.extend_from_slice(&at.to_le_bytes());
            header.extend_from_slice(&(s.len() as u64).to_le_bytes());
            at += s.len() as u64;
        }
        let file = std::fs::File::create(path).map_err(io)?;
        let mut out = std::io::BufWriter::with_capacity(1 << 20, &file);
        let mut crc = crc32fast::Hasher::new();
        let mut put = |bytes: &[u8], out: &mut std::io::BufWriter<&std::fs::File>| {
            crc.update(bytes);
            out.write_all(bytes)
        };
        put(&header, &mut out).map_err(io)?;
        let mut written = header.len() as u64;
        for s in &sections {
            let pad = (written.div_ceil(8) * 8 - written) as usize;
            put(&[0u8; 8][..pad], &mut out).map_err(io)?;
            put(s, &mut out).map_err(io)?;
            written += (pad + s.len()) as u64;
        }
        out.flush().map_err(io)?;
        drop(out);
        file.sync_all().map_err(io)?;
        Ok(Written {
            rows: self.created.len() as u64,
            bytes: written,
            crc32: crc.finalize(),
            max_created_us: self.created.first().copied().unwrap_or(i64::MIN),
            key_xor: self.key_xor,
        })
    }
}

/// A segment file, memory-mapped and checked for shape (not content) when opened.
pub struct Segment {
    map: memmap2::Mmap,
    path: String,
    rows: usize,
    rows_per_block: usize,
    version: u32,
    total_length: u64,
    /// `(offset, length)` per section; the postings' entries stay zero in version 1.
    sections: [(usize, usize); SECTIONS],
}

impl std::fmt::Debug for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Segment")
            .field("path", &self.path)
            .field("rows", &self.rows)
            .finish_non_exhaustive()
    }
}

impl Segment {
    /// Maps `path` and checks its header and section table: magic, version, byte
    /// order, every section inside the file, 8-byte aligned and of the length the row
    /// count implies. O(1): no row is read.
    ///
    /// # Errors
    /// [`SegmentError::Io`] when the file cannot be opened or mapped;
    /// [`SegmentError::Corrupt`] naming what does not fit.
    pub fn open(path: &Path) -> Result<Self, SegmentError> {
        let shown = path.display().to_string();
        let file = std::fs::File::open(path).map_err(|source| SegmentError::Io {
            path: shown.clone(),
            source,
        })?;
        // SAFETY: segment files are written once under a fresh name, fsynced, published
        // by renaming the manifest, and never modified afterwards (only unlinked, which
        // leaves existing mappings valid), so the mapped bytes cannot change under us.
        #[allow(unsafe_code)]
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|source| SegmentError::Io {
            path: shown.clone(),
            source,
        })?;
        let bad = |reason: String| SegmentError::Corrupt {
            path: shown.clone(),
            reason,
        };
        let b: &[u8] = &map;
        if b.len() < HEADER + SECTIONS_V1 * 16 || &b[..8] != MAGIC {
            return Err(bad("not an index segment (bad magic or too short)".into()));
        }
        let version = u32_at(b, 8);
        let count = match version {
            VERSION | VERSION_3 => SECTIONS,
            VERSION_2 => SECTIONS_V2,
            VERSION_1 => SECTIONS_V1,
            v => {
                return Err(bad(format!(
                    "format version {v} (expected {VERSION_1} to {VERSION})"
                )))
            }
        };
        if b.len() < HEADER + count * 16 {
            return Err(bad("section table cut short".into()));
        }
        if u32_at(b, 12) != BOM || cfg!(target_endian = "big") {
            return Err(bad("byte order differs from this machine's".into()));
        }
        let rows = usize::try_from(u64_at(b, 16)).map_err(|_| bad("row count".into()))?;
        let rows_per_block = u32_at(b, 24) as usize;
        if u32_at(b, 28) as usize != count || rows_per_block == 0 {
            return Err(bad("section count or block size".into()));
        }
        let total_length = u64_at(b, 32);
        let mut sections = [(0usize, 0usize); SECTIONS];
        for (i, s) in sections.iter_mut().enumerate().take(count) {
            let off = u64_at(b, HEADER + i * 16);
            let len = u64_at(b, HEADER + i * 16 + 8);
            let end = off
                .checked_add(len)
                .ok_or_else(|| bad(format!("section {i}")))?;
            if !off.is_multiple_of(8) || end > b.len() as u64 {
                return Err(bad(format!("section {i} lies outside the file")));
            }
            *s = (off as usize, len as usize);
        }
        let expect = [
            (sec::CREATED, rows * 8),
            (sec::FLAGS, rows),
            (sec::ROLE, rows),
            (sec::SOURCE, rows * 2),
            (sec::CONV, rows * 4),
            (sec::MSG, (rows + 1) * 8),
            (sec::TEXT, (rows + 1) * 8),
            (sec::CASE, (rows + 1) * 8),
            (sec::FILTER, rows.div_ceil(rows_per_block) * BLOCK_WORDS * 8),
        ];
        for (i, len) in expect {
            if sections[i].1 != len {
                return Err(bad(format!(
                    "section {i} has {} bytes, expected {len}",
                    sections[i].1
                )));
            }
        }
        let mut tables = vec![sec::ROLES, sec::SOURCES, sec::CONVS];
        if version >= VERSION_2 {
            if sections[sec::LENGTHS].1 != rows * 2 {
                return Err(bad(format!(
                    "section {} has {} bytes, expected {}",
                    sec::LENGTHS,
                    sections[sec::LENGTHS].1,
                    rows * 2
                )));
            }
            if sections[sec::TERMS].1 != sections[sec::LISTS].1 {
                return Err(bad("term and list offsets differ in length".into()));
            }
            tables.extend([sec::TERMS, sec::LISTS]);
        }
        if version >= VERSION_3 {
            if sections[sec::PROJECT].1 != rows * 4 {
                return Err(bad(format!(
                    "section {} has {} bytes, expected {}",
                    sec::PROJECT,
                    sections[sec::PROJECT].1,
                    rows * 4
                )));
            }
            tables.push(sec::PROJECTS);
        }
        for i in tables {
            if sections[i].1 < 8 || sections[i].1 % 8 != 0 {
                return Err(bad(format!("string table section {i}")));
            }
        }
        Ok(Self {
            map,
            path: shown,
            rows,
            rows_per_block,
            version,
            total_length,
            sections,
        })
    }

    /// The file this segment was read from.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The format version of the file ([`VERSION`] or an older one it reads).
    pub fn version(&self) -> u32 {
        self.version
    }

    /// True when the file holds each row's `project` (version 3 on).
    pub fn has_projects(&self) -> bool {
        self.version >= VERSION_3
    }

    /// Project dictionary index per row ([`NO_PROJECT`] for NULL); empty before
    /// version 3.
    pub fn project_ids(&self) -> &[u32] {
        if self.has_projects() {
            self.words(sec::PROJECT)
        } else {
            &[]
        }
    }

    /// Distinct projects in the file (0 before version 3).
    pub fn project_count(&self) -> usize {
        if self.has_projects() {
            self.dict_len(sec::PROJECTS)
        } else {
            0
        }
    }

    /// Entry `i` of the project dictionary.
    ///
    /// # Errors
    /// [`Corrupt`] when the dictionary is damaged or `i` is past it.
    pub fn project_name(&self, i: usize) -> Result<&str, Corrupt> {
        if !self.has_projects() {
            return Err(Corrupt);
        }
        self.string(sec::PROJECTS, i)
    }

    /// Row `i`'s project (`None`: NULL, or a file before version 3).
    ///
    /// # Errors
    /// [`Corrupt`] when the row or the dictionary is damaged.
    pub fn project(&self, i: usize) -> Result<Option<&str>, Corrupt> {
        if !self.has_projects() {
            return Ok(None);
        }
        match *self.project_ids().get(i).ok_or(Corrupt)? {
            NO_PROJECT => Ok(None),
            p => self.string(sec::PROJECTS, p as usize).map(Some),
        }
    }

    /// The BM25 postings of the folded text, terms stemmed; `None` before version 4
    /// (no postings, or postings of words as written, which stemmed queries miss).
    pub fn postings(&self) -> Option<Postings<'_>> {
        (self.version >= VERSION).then(|| Postings {
            term_offsets: self.words(sec::TERMS),
            terms: self.bytes(sec::TERMS + 1),
            list_offsets: self.words(sec::LISTS),
            lists: self.bytes(sec::LISTS + 1),
            lengths: self.words(sec::LENGTHS),
            total_length: self.total_length,
        })
    }

    /// Rows.
    pub fn len(&self) -> usize {
        self.rows
    }

    /// True when the segment holds no row.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    fn bytes(&self, i: usize) -> &[u8] {
        let (off, len) = self.sections[i];
        &self.map[off..off + len]
    }

    fn words<T: bytemuck::AnyBitPattern>(&self, i: usize) -> &[T] {
        // Sections are 8-aligned in a page-aligned map and their lengths were checked.
        bytemuck::try_cast_slice(self.bytes(i)).unwrap_or(&[])
    }

    /// `created` (µs) per row.
    pub fn created(&self) -> &[i64] {
        self.words(sec::CREATED)
    }

    /// Flags per row ([`HAS_QUESTION`], [`NOT_INJECTED`]).
    pub fn flags(&self) -> &[u8] {
        self.bytes(sec::FLAGS)
    }

    /// Role dictionary index per row.
    pub fn role_ids(&self) -> &[u8] {
        self.bytes(sec::ROLE)
    }

    /// Source dictionary index per row.
    pub fn source_ids(&self) -> &[u16] {
        self.words(sec::SOURCE)
    }

    /// Conversation dictionary index per row.
    pub fn conversation_ids(&self) -> &[u32] {
        self.words(sec::CONV)
    }

    fn string(&self, table: usize, i: usize) -> Result<&str, Corrupt> {
        let offs: &[u64] = self.words(table);
        let a = usize::try_from(*offs.get(i).ok_or(Corrupt)?).map_err(|_| Corrupt)?;
        let b = usize::try_from(*offs.get(i + 1).ok_or(Corrupt)?).map_err(|_| Corrupt)?;
        let bytes = self.bytes(table + 1).get(a..b).ok_or(Corrupt)?;
        std::str::from_utf8(bytes).map_err(|_| Corrupt)
    }

    fn dict_len(&self, table: usize) -> usize {
        self.sections[table].1 / 8 - 1
    }

    /// Index of `s` in a sorted dictionary.
    fn find(&self, table: usize, s: &str) -> Result<Option<u32>, Corrupt> {
        let (mut lo, mut hi) = (0usize, self.dict_len(table));
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.string(table, mid)?.cmp(s) {
                Ordering::Less => lo = mid + 1,
                Ordering::Greater => hi = mid,
                Ordering::Equal => return Ok(u32::try_from(mid).ok()),
            }
        }
        Ok(None)
    }

    /// The dictionary index of role `role`, if any row has it.
    ///
    /// # Errors
    /// [`Corrupt`] when the dictionary is damaged.
    pub fn role_id(&self, role: &str) -> Result<Option<u8>, Corrupt> {
        Ok(self
            .find(sec::ROLES, role)?
            .and_then(|i| u8::try_from(i).ok()))
    }

    /// The dictionary index of source `source`, if any row has it.
    ///
    /// # Errors
    /// [`Corrupt`] when the dictionary is damaged.
    pub fn source_id(&self, source: &str) -> Result<Option<u16>, Corrupt> {
        Ok(self
            .find(sec::SOURCES, source)?
            .and_then(|i| u16::try_from(i).ok()))
    }

    /// The dictionary index of conversation id `id`, if any row has it.
    ///
    /// # Errors
    /// [`Corrupt`] when the dictionary is damaged.
    pub fn conversation_id_of(&self, id: &str) -> Result<Option<u32>, Corrupt> {
        self.find(sec::CONVS, id)
    }

    /// Row `i`'s role.
    ///
    /// # Errors
    /// [`Corrupt`] when the row or the dictionary is damaged.
    pub fn role(&self, i: usize) -> Result<&str, Corrupt> {
        self.string(
            sec::ROLES,
            usize::from(*self.role_ids().get(i).ok_or(Corrupt)?),
        )
    }

    /// Row `i`'s source.
    ///
    /// # Errors
    /// [`Corrupt`] when the row or the dictionary is damaged.
    pub fn source(&self, i: usize) -> Result<&str, Corrupt> {
        self.string(
            sec::SOURCES,
            usize::from(*self.source_ids().get(i).ok_or(Corrupt)?),
        )
    }

    /// Row `i`'s conversation id.
    ///
    /// # Errors
    /// [`Corrupt`] when the row or the dictionary is damaged.
    pub fn conversation_id(&self, i: usize) -> Result<&str, Corrupt> {
        let c = *self.conversation_ids().get(i).ok_or(Corrupt)?;
        self.string(sec::CONVS, c as usize)
    }

    /// Row `i`'s message id.
    ///
    /// # Errors
    /// [`Corrupt`] when the row is damaged.
    pub fn message_id(&self, i: usize) -> Result<&str, Corrupt> {
        self.string(sec::MSG, i)
    }

    /// Row `i`'s sort key (`created`, `source`, `conversation_id`, `message_id`).
    ///
    /// # Errors
    /// [`Corrupt`] when the row is damaged.
    pub fn key(&self, i: usize) -> Result<(i64, &str, &str, &str), Corrupt> {
        Ok((
            *self.created().get(i).ok_or(Corrupt)?,
            self.source(i)?,
            self.conversation_id(i)?,
            self.message_id(i)?,
        ))
    }

    /// The folded text of every row.
    pub fn texts(&self) -> Texts<'_> {
        Texts {
            text: self.bytes(sec::TEXT + 1),
            offsets: self.words(sec::TEXT),
        }
    }

    /// The case exceptions of every row (same shape as [`Segment::texts`]).
    pub fn cases(&self) -> Texts<'_> {
        Texts {
            text: self.bytes(sec::CASE + 1),
            offsets: self.words(sec::CASE),
        }
    }

    /// The 4-gram block filter.
    pub fn filter(&self) -> Filter<'_> {
        Filter {
            bits: self.words(sec::FILTER),
            rows_per_block: self.rows_per_block,
        }
    }

    /// The first [`PREVIEW_CHARS`] characters of row `i`'s original content.
    ///
    /// # Errors
    /// [`Corrupt`] when the row is damaged.
    pub fn preview(&self, i: usize) -> Result<String, Corrupt> {
        scan::unfold_prefix(self.texts().row(i)?, self.cases().row(i)?, PREVIEW_CHARS)
    }

    /// CRC-32 of the whole file (reads every byte).
    pub fn crc32(&self) -> u32 {
        crc32fast::hash(&self.map)
    }

    /// Row `i` as a [`RowIn`] (for merging segments).
    ///
    /// # Errors
    /// [`Corrupt`] when the row is damaged.
    pub fn row(&self, i: usize) -> Result<RowIn<'_>, Corrupt> {
        Ok(RowIn {
            created_us: *self.created().get(i).ok_or(Corrupt)?,
            source: self.source(i)?,
            conversation_id: self.conversation_id(i)?,
            message_id: self.message_id(i)?,
            role: self.role(i)?,
            project: self.project(i)?,
            flags: *self.flags().get(i).ok_or(Corrupt)?,
            folded: self.texts().row(i)?,
            case: self.cases().row(i)?,
        })
    }
}
