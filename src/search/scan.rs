//! A newest-first substring scan that answers DuckDB's
//! `content ILIKE '%' || term || '%'` exactly, over rows held in search order.
//!
//! How: the caller keeps the *folded* (lowercased, see [`fold`]) text of all rows in
//! one contiguous buffer, newest row first ([`Texts`]). [`find`] walks that buffer
//! with SIMD substring search (`memchr::memmem`) and stops as soon as `limit` rows
//! matched, so a term that matches often costs microseconds, and a term that never
//! matches costs one pass over the text at memory speed. A [`Filter`] of hashed byte
//! 4-grams per block of rows lets the walk skip blocks that cannot hold a match.
//!
//! Matching rules copied from DuckDB 1.5 (`ILIKE` lowercases both sides, then `LIKE`):
//! - folding is per code point with Unicode *simple* lowercase mappings (utf8proc's
//!   `tolower`), so `İ` (U+0130) folds to `i`, `Σ` always to `σ`, and `K` (Kelvin
//!   sign) to ASCII `k`;
//! - in the folded pattern `%` matches any sequence and `_` exactly one character
//!   (code point: `'caf_s'` matches `cafés`); there is no escape character.
//!
//! The buffers are borrowed (`stores::conversations` memory-maps them from its index
//! files), so nothing here trusts them: a broken offset makes [`find`] return
//! [`Corrupt`], never panic.
//!
//! Kept in one file: one algorithm — pattern compiler, scan, block filter, case exceptions — whose pieces must agree byte for byte; a third of it is its tests.

use memchr::memmem;

use crate::cancel::Cancel;

/// Lowercases `s` the way DuckDB's `lower()` and `ILIKE` do, appending to `out`:
/// ASCII by table, other code points by their simple lowercase mapping.
pub fn fold(s: &str, out: &mut Vec<u8>) {
    if s.is_ascii() {
        out.extend(s.bytes().map(|b| b.to_ascii_lowercase()));
        return;
    }
    let mut buf = [0u8; 4];
    for c in s.chars() {
        if c.is_ascii() {
            out.push(c.to_ascii_lowercase() as u8);
        } else {
            out.extend_from_slice(fold_char(c).encode_utf8(&mut buf).as_bytes());
        }
    }
}

/// Capital letters whose lowercase Rust's Unicode tables know but DuckDB 1.5's
/// utf8proc does not (letters added in Unicode 16), so DuckDB's `lower()` keeps them.
/// Found by `tests/search_index.rs`, which compares every code point with DuckDB.
const UNMAPPED_BY_DUCKDB: &[(u32, u32)] = &[
    (0x1C89, 0x1C89),
    (0xA7CB, 0xA7CC),
    (0xA7CE, 0xA7CE),
    (0xA7D2, 0xA7D2),
    (0xA7D4, 0xA7D4),
    (0xA7DA, 0xA7DA),
    (0xA7DC, 0xA7DC),
    (0x10D50, 0x10D65),
    (0x16EA0, 0x16EB8),
];

/// The simple lowercase mapping of `c`, as DuckDB's `lower()` applies it.
pub fn fold_char(c: char) -> char {
    if c.is_ascii() {
        return c.to_ascii_lowercase();
    }
    // `char::to_lowercase` is the full mapping; it differs from the simple one
    // only for U+0130, whose simple lowercase is plain `i`.
    if c == '\u{130}' {
        return 'i';
    }
    let cp = c as u32;
    if UNMAPPED_BY_DUCKDB
        .iter()
        .any(|&(lo, hi)| (lo..=hi).contains(&cp))
    {
        return c;
    }
    let mut it = c.to_lowercase();
    match (it.next(), it.next()) {
        (Some(l), None) => l,
        _ => c,
    }
}

/// One piece of a `%`-free pattern segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// These bytes, exactly.
    Literal(Vec<u8>),
    /// `n` characters, any value (`n` consecutive `_`).
    Any(usize),
}

/// A compiled `ILIKE '%' || term || '%'` pattern over folded text.
#[derive(Debug, Clone)]
pub enum Pattern {
    /// Matches every row (`term` empty or only `%`).
    All,
    /// A plain substring (no wildcard).
    Literal(memmem::Finder<'static>),
    /// `%`-separated segments, each a run of literal bytes and `_`, matched in order.
    Wildcard {
        /// The segments, in order; none is empty.
        segments: Vec<Vec<Piece>>,
        /// The first segment's first literal, used to find candidate rows.
        anchor: Option<memmem::Finder<'static>>,
    },
}

impl Pattern {
    /// Compiles `term` (as the user typed it) into a pattern over folded text.
    pub fn new(term: &str) -> Self {
        let mut folded = Vec::with_capacity(term.len());
        fold(term, &mut folded);
        if !folded.contains(&b'%') && !folded.contains(&b'_') {
            return Self::Literal(memmem::Finder::new(&folded).into_owned());
        }
        let segments: Vec<Vec<Piece>> = folded
            .split(|&b| b == b'%')
            .filter(|s| !s.is_empty())
            .map(|seg| {
                let mut pieces: Vec<Piece> = Vec::new();
                for &b in seg {
                    match (b, pieces.last_mut()) {
                        (b'_', Some(Piece::Any(n))) => *n += 1,
                        (b'_', _) => pieces.push(Piece::Any(1)),
                        (b, Some(Piece::Literal(l))) => l.push(b),
                        (b, _) => pieces.push(Piece::Literal(vec![b])),
                    }
                }
                pieces
            })
            .collect();
        if segments.is_empty() {
            return Self::All;
        }
        let anchor = match segments[0].first() {
            Some(Piece::Literal(l)) => Some(memmem::Finder::new(l).into_owned()),
            _ => None,
        };
        Self::Wildcard { segments, anchor }
    }

    /// Hashes of the byte `n`-grams (`n` = 3 or 4) every matching text contains (those
    /// of every literal piece), deduplicated; empty when no literal has `n` bytes.
    pub fn grams(&self, n: usize) -> Vec<u32> {
        let mut out: Vec<u32> = Vec::new();
        let mut add = |lit: &[u8]| out.extend(lit.windows(n).map(gram));
        match self {
            Self::All => {}
            Self::Literal(f) => add(f.needle()),
            Self::Wildcard { segments, .. } => {
                for piece in segments.iter().flatten() {
                    if let Piece::Literal(l) = piece {
                        add(l);
                    }
                }
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Words every matching text holds whole, as [`crate::search::words::words`] splits
    /// text (maximal runs of alphanumeric characters): the runs of a literal piece with
    /// a non-alphanumeric character of that same piece on both sides. A run at a
    /// piece's edge is left out, since in the text it may continue past the match or
    /// into what a `_` or `%` stands for. In `why does the build fail`, `does`, `the`,
    /// `build` are whole words of any match; `why` and `fail` may be parts of longer ones.
    pub fn whole_words(&self) -> Vec<&str> {
        let mut out = Vec::new();
        match self {
            Self::All => {}
            Self::Literal(f) => bounded_runs(f.needle(), &mut out),
            Self::Wildcard { segments, .. } => {
                for piece in segments.iter().flatten() {
                    if let Piece::Literal(l) = piece {
                        bounded_runs(l, &mut out);
                    }
                }
            }
        }
        out
    }

    /// True when folded `text` matches (the whole pattern, `%` at both ends).
    pub fn matches(&self, text: &[u8]) -> bool {
        match self {
            Self::All => true,
            Self::Literal(f) => f.find(text).is_some(),
            Self::Wildcard { segments, .. } => {
                let mut pos = 0;
                for seg in segments {
                    match find_segment(text, pos, seg) {
                        Some(end) => pos = end,
                        None => return false,
                    }
                }
                true
            }
        }
    }
}

/// The alphanumeric runs of `literal` (folded UTF-8) with a non-alphanumeric
/// character of `literal` before and after them, appended to `out`.
fn bounded_runs<'a>(literal: &'a [u8], out: &mut Vec<&'a str>) {
    let Ok(text) = std::str::from_utf8(literal) else {
        return;
    };
    // Start of the current run, and whether a non-alphanumeric character precedes it.
    let mut run: Option<(usize, bool)> = None;
    let mut after_separator = false;
    for (i, c) in text.char_indices() {
        if c.is_alphanumeric() {
            if run.is_none() {
                run = Some((i, after_separator));
            }
        } else {
            if let Some((start, true)) = run {
                out.push(&text[start..i]);
            }
            run = None;
            after_separator = true;
        }
    }
}

/// Where `seg` matches `text` at exactly `at`: the end offset.
fn match_at(text: &[u8], at: usize, seg: &[Piece]) -> Option<usize> {
    let mut i = at;
    for piece in seg {
        match piece {
            Piece::Literal(l) => {
                if !text.get(i..)?.starts_with(l) {
                    return None;
                }
                i += l.len();
            }
            Piece::Any(n) => {
                for _ in 0..*n {
                    i += utf8_len(*text.get(i)?);
                }
                if i > text.len() {
                    return None;
                }
            }
        }
    }
    Some(i)
}

/// Length of the UTF-8 sequence that starts with byte `lead`.
fn utf8_len(lead: u8) -> usize {
    match lead {
        0xF0..=0xFF => 4,
        0xE0..=0xEF => 3,
        0xC0..=0xDF => 2,
        _ => 1,
    }
}

/// The end of the leftmost match of `seg` in `text[from..]`. Leftmost is enough: with
/// `%` on both sides of every segment, an earlier end never loses a match.
fn find_segment(text: &[u8], from: usize, seg: &[Piece]) -> Option<usize> {
    match seg.first() {
        Some(Piece::Literal(l)) => {
            let mut start = from;
            while let Some(p) = memmem::find(text.get(start..)?, l) {
                if let Some(end) = match_at(text, start + p, seg) {
                    return Some(end);
                }
                start += p + 1;
            }
            None
        }
        // Starting inside a character gives the same ends as starting at its first
        // byte (`_` consumes the rest of it), so character starts are enough.
        _ => (from..=text.len())
            .filter(|&at| text.get(at).is_none_or(|&b| (b & 0xC0) != 0x80))
            .find_map(|at| match_at(text, at, seg)),
    }
}

/// Folded text of rows in search order: row `i` is `text[offsets[i]..offsets[i + 1]]`,
/// so `offsets` has one entry more than there are rows and starts at 0.
#[derive(Debug, Clone, Copy)]
pub struct Texts<'a> {
    /// Folded text of every row, concatenated.
    pub text: &'a [u8],
    /// Byte offsets of the rows in `text` (rows + 1 entries, non-decreasing).
    pub offsets: &'a [u64],
}

/// A [`Texts`] whose offsets do not describe its text (a damaged index file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("row offsets do not match the text they index")]
pub struct Corrupt;

impl<'a> Texts<'a> {
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// True when there is no row.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn offset(&self, i: usize) -> Result<usize, Corrupt> {
        let o = *self.offsets.get(i).ok_or(Corrupt)?;
        usize::try_from(o).map_err(|_| Corrupt)
    }

    /// Folded text of row `i`.
    ///
    /// # Errors
    /// [`Corrupt`] when `i` is out of range or its offsets do not fit the text.
    pub fn row(&self, i: usize) -> Result<&'a [u8], Corrupt> {
        let (a, b) = (self.offset(i)?, self.offset(i + 1)?);
        self.text.get(a..b).ok_or(Corrupt)
    }

    /// The row containing byte `at` of the text (offsets are non-decreasing).
    fn row_of(&self, at: usize) -> Result<usize, Corrupt> {
        let at = at as u64;
        let i = self.offsets.partition_point(|&o| o <= at);
        i.checked_sub(1).filter(|&r| r < self.len()).ok_or(Corrupt)
    }
}

/// Bits per block in a [`Filter`] (a power of two).
pub const BLOCK_BITS: usize = 1 << 16;

/// 64-bit words per block in a [`Filter`].
pub const BLOCK_WORDS: usize = BLOCK_BITS / 64;

/// Bytes per n-gram in a [`Filter`]: 4-grams separate rare words built of common
/// trigrams (`persofi`); see docs/performance.md for the measured alternatives.
pub const GRAM: usize = 4;

/// Hash of one byte 4-gram into `0..BLOCK_BITS`.
fn gram(w: &[u8]) -> u32 {
    let x = w
        .iter()
        .take(4)
        .enumerate()
        .fold(0u32, |acc, (i, &b)| acc | u32::from(b) << (8 * i));
    x.wrapping_mul(0x9E37_79B1) >> 16
}

/// A 4-gram filter per block of rows: for each block of `rows_per_block` consecutive
/// rows, a [`BLOCK_BITS`]-bit set of the hashed byte 4-grams of their folded text
/// ([`BLOCK_WORDS`] words per block, block after block). A block whose set lacks any
/// 4-gram of the pattern cannot hold a match and is skipped; false positives only
/// cost a scan, so results are unchanged.
#[derive(Debug, Clone, Copy)]
pub struct Filter<'a> {
    /// The bit sets, [`BLOCK_WORDS`] words per block.
    pub bits: &'a [u64],
    /// Rows per block (≥ 1).
    pub rows_per_block: usize,
}

impl Filter<'_> {
    /// Builds the bit sets of `texts` with blocks of `rows_per_block` rows (≥ 1).
    ///
    /// # Errors
    /// [`Corrupt`] when the offsets do not fit the text.
    pub fn build(texts: &Texts<'_>, rows_per_block: usize) -> Result<Vec<u64>, Corrupt> {
        let rows_per_block = rows_per_block.max(1);
        let blocks = texts.len().div_ceil(rows_per_block);
        let mut bits = vec![0u64; blocks * BLOCK_WORDS];
        for (block, set) in bits.chunks_exact_mut(BLOCK_WORDS).enumerate() {
            let first = block * rows_per_block;
            let last = (first + rows_per_block).min(texts.len());
            // Grams across row boundaries are set too: harmless extra bits.
            let (a, b) = (texts.offset(first)?, texts.offset(last)?);
            for w in texts.text.get(a..b).ok_or(Corrupt)?.windows(GRAM) {
                let g = gram(w) as usize;
                set[g / 64] |= 1 << (g % 64);
            }
        }
        Ok(bits)
    }

    /// Number of blocks.
    pub fn blocks(&self) -> usize {
        self.bits.len() / BLOCK_WORDS
    }

    fn may_contain(&self, block: usize, grams: &[u32]) -> bool {
        let Some(set) = self
            .bits
            .get(block * BLOCK_WORDS..(block + 1) * BLOCK_WORDS)
        else {
            return true;
        };
        grams
            .iter()
            .all(|&g| set[g as usize / 64] & (1 << (g % 64)) != 0)
    }
}

/// Appends to `out`, in row order, the first rows of `texts` (at most `limit` in all,
/// counting what `out` already holds) whose folded text matches `pattern` and that
/// `accept` takes (role, tombstones…; called only for matching rows). `filter`, when
/// given, must have been built over these same texts. Once `stop` has stopped, it
/// returns early with the rows found so far (checked per block, per candidate row and
/// every [`STOP_CHECK_ROWS`] rows tested one by one).
///
/// # Errors
/// [`Corrupt`] when the offsets do not describe the text.
pub fn find(
    texts: &Texts<'_>,
    filter: Option<&Filter<'_>>,
    pattern: &Pattern,
    accept: &mut dyn FnMut(usize) -> bool,
    limit: usize,
    out: &mut Vec<usize>,
    stop: &Cancel,
) -> Result<(), Corrupt> {
    if out.len() >= limit || texts.is_empty() {
        return Ok(());
    }
    let anchor = match pattern {
        Pattern::All => None,
        Pattern::Literal(f) if f.needle().is_empty() => None,
        Pattern::Literal(f) => Some(f),
        Pattern::Wildcard { anchor, .. } => anchor.as_ref(),
    };
    let Some(anchor) = anchor else {
        // No literal to look for: test rows one by one.
        for i in 0..texts.len() {
            if i % STOP_CHECK_ROWS == 0 && stop.is_stopped() {
                break;
            }
            if pattern.matches(texts.row(i)?) && accept(i) {
                out.push(i);
                if out.len() >= limit {
                    break;
                }
            }
        }
        return Ok(());
    };
    let grams = filter.map(|_| pattern.grams(GRAM)).unwrap_or_default();
    match filter {
        Some(f) if !grams.is_empty() => {
            let per = f.rows_per_block.max(1);
            for block in 0..texts.len().div_ceil(per) {
                if !f.may_contain(block, &grams) {
                    continue;
                }
                if stop.is_stopped() {
                    break;
                }
                let first = block * per;
                let last = (first + per).min(texts.len());
                let range = texts.offset(first)?..texts.offset(last)?;
                scan(texts, pattern, anchor, accept, limit, range, out, stop)?;
                if out.len() >= limit {
                    break;
                }
            }
            Ok(())
        }
        _ => scan(
            texts,
            pattern,
            anchor,
            accept,
            limit,
            0..texts.text.len(),
            out,
            stop,
        ),
    }
}

/// Rows tested one by one between two checks of the stop signal in [`find`].
pub const STOP_CHECK_ROWS: usize = 1024;

/// Searches `text[range]` (whole rows) for `anchor`, verifying each candidate row
/// against `pattern` and `accept`, appending matching rows until `out` holds `limit`
/// or `stop` has stopped (checked per candidate row).
#[allow(clippy::too_many_arguments)] // `find`'s parameters and the region
fn scan(
    texts: &Texts<'_>,
    pattern: &Pattern,
    anchor: &memmem::Finder<'_>,
    accept: &mut dyn FnMut(usize) -> bool,
    limit: usize,
    range: std::ops::Range<usize>,
    out: &mut Vec<usize>,
    stop: &Cancel,
) -> Result<(), Corrupt> {
    let needle_len = anchor.needle().len();
    let region = texts.text.get(range.clone()).ok_or(Corrupt)?;
    let mut pos = 0;
    while pos < region.len() {
        if stop.is_stopped() {
            break;
        }
        let Some(hit) = anchor.find(&region[pos..]) else {
            break;
        };
        let at = range.start + pos + hit;
        let row = texts.row_of(at)?;
        let end = texts.offset(row + 1)?;
        if end <= at {
            return Err(Corrupt);
        }
        if at + needle_len > end {
            // The hit straddles two rows: look again just after its start.
            pos += hit + 1;
            continue;
        }
        let verified = matches!(pattern, Pattern::Literal(_)) || pattern.matches(texts.row(row)?);
        if verified && accept(row) {
            out.push(row);
            if out.len() >= limit {
                return Ok(());
            }
        }
        pos = end.checked_sub(range.start).ok_or(Corrupt)?;
    }
    Ok(())
}

/// Folds `content` for the index and records how to get its first `chars` characters
/// back: returns the folded bytes' length appended to `folded`, and appends to `case`
/// the exceptions — for each of the first `chars` characters whose original differs
/// from its folded form, the gap since the previous exception (LEB128) and the
/// original character (UTF-8). [`unfold_prefix`] reverses it. Folding maps every
/// character to exactly one character, so positions carry over.
pub fn fold_with_case(content: &str, chars: usize, folded: &mut Vec<u8>, case: &mut Vec<u8>) {
    fold(content, folded);
    if content.is_ascii() && !content.bytes().take(chars).any(|b| b.is_ascii_uppercase()) {
        return;
    }
    let mut next = 0usize;
    let mut buf = [0u8; 4];
    for (i, c) in content.chars().take(chars).enumerate() {
        if fold_char(c) != c {
            let mut gap = i - next;
            loop {
                let byte = (gap & 0x7F) as u8;
                gap >>= 7;
                if gap == 0 {
                    case.push(byte);
                    break;
                }
                case.push(byte | 0x80);
            }
            case.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            next = i + 1;
        }
    }
}

/// The first `chars` characters of the original text, from its folded text and the
/// exceptions [`fold_with_case`] recorded.
///
/// # Errors
/// [`Corrupt`] when the bytes are not what [`fold_with_case`] writes.
pub fn unfold_prefix(folded: &[u8], case: &[u8], chars: usize) -> Result<String, Corrupt> {
    let folded = std::str::from_utf8(folded).map_err(|_| Corrupt)?;
    let mut out = String::with_capacity(folded.len().min(chars * 4));
    let mut exceptions = Exceptions { bytes: case };
    let mut next = exceptions.next()?;
    let mut base = 0usize;
    for (i, c) in folded.chars().take(chars).enumerate() {
        match next {
            Some((gap, original)) if base + gap == i => {
                out.push(original);
                base = i + 1;
                next = exceptions.next()?;
            }
            _ => out.push(c),
        }
    }
    Ok(out)
}

/// Reader of the exception list [`fold_with_case`] writes.
struct Exceptions<'a> {
    bytes: &'a [u8],
}

impl Exceptions<'_> {
    fn next(&mut self) -> Result<Option<(usize, char)>, Corrupt> {
        if self.bytes.is_empty() {
            return Ok(None);
        }
        let mut gap = 0usize;
        let mut shift = 0;
        loop {
            let (&b, rest) = self.bytes.split_first().ok_or(Corrupt)?;
            self.bytes = rest;
            if shift > 56 {
                return Err(Corrupt);
            }
            gap |= usize::from(b & 0x7F) << shift;
            shift += 7;
            if b & 0x80 == 0 {
                break;
            }
        }
        let lead = *self.bytes.first().ok_or(Corrupt)?;
        let len = utf8_len(lead);
        let s = self.bytes.get(..len).ok_or(Corrupt)?;
        let c = std::str::from_utf8(s)
            .ok()
            .and_then(|s| s.chars().next())
            .ok_or(Corrupt)?;
        self.bytes = &self.bytes[len..];
        Ok(Some((gap, c)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folded(rows: &[&str]) -> (Vec<u8>, Vec<u64>) {
        let mut text = Vec::new();
        let mut offsets = vec![0u64];
        for r in rows {
            fold(r, &mut text);
            offsets.push(text.len() as u64);
        }
        (text, offsets)
    }

    #[test]
    fn whole_words_are_the_runs_bounded_inside_one_literal() {
        let words = |t: &str| Pattern::new(t).whole_words().join(" ");
        assert_eq!(words("why does the build fail"), "does the build");
        assert_eq!(words(" build "), "build");
        assert_eq!(words("build"), "");
        assert_eq!(words("tokio::spawn(async move {"), "spawn async move");
        assert_eq!(words("(id: u64)"), "id u64");
        // A `_` stands for any character, a `%` for any run: neither bounds a word.
        assert_eq!(words("a_b c d"), "c");
        assert_eq!(words("%.iter() %"), "iter");
        assert_eq!(words(" x%y "), "");
        // Folded first: `ΣΟΦΙΑ` is `σοφια`, `Ǆ` one character.
        assert_eq!(words("and ΣΟΦΙΑ and"), "σοφια");
        assert_eq!(words(" Ǆemal "), "ǆemal");
        assert_eq!(words(""), "");
        // Every match holds each word whole, so each row the pattern matches holds it.
        let (text, offsets) = folded(&["We said: why does the build fail, again", "rebuild fails"]);
        let texts = Texts {
            text: &text,
            offsets: &offsets,
        };
        let p = Pattern::new("why does the build fail");
        assert!(p.matches(texts.row(0).unwrap()));
        let row: Vec<&str> =
            crate::search::words::words(std::str::from_utf8(texts.row(0).unwrap()).unwrap())
                .collect();
        for w in p.whole_words() {
            assert!(row.contains(&w), "{w}");
        }
    }

    #[test]
    fn wildcards() {
        let p = |t: &str, text: &str| {
            let mut f = Vec::new();
            fold(text, &mut f);
            Pattern::new(t).matches(&f)
        };
        assert!(p("a%c", "xxabc"));
        assert!(p("a_c", "abc"));
        assert!(!p("a_c", "ac"));
        assert!(p("%", ""));
        assert!(p("_", "é"));
        assert!(p("caf_s", "cafés"));
        assert!(!p("caf__s", "cafés"));
        assert!(!p("a__b", "ab"));
        assert!(p("AB%CD", "ab cd"));
        assert!(!p("cd%ab", "ab cd"));
    }

    #[test]
    fn find_walks_rows_in_order_with_and_without_the_filter() {
        let rows: Vec<String> = (0..100)
            .map(|i| match i % 10 {
                3 => format!("row {i} mentions Persofi here"),
                7 => format!("row {i} serde_json and async fn"),
                _ => format!("row {i} plain words"),
            })
            .collect();
        let refs: Vec<&str> = rows.iter().map(String::as_str).collect();
        let (text, offsets) = folded(&refs);
        let texts = Texts {
            text: &text,
            offsets: &offsets,
        };
        let bits = Filter::build(&texts, 8).unwrap();
        let filter = Filter {
            bits: &bits,
            rows_per_block: 8,
        };
        for (term, expect) in [
            ("persofi", vec![3, 13, 23]),
            ("SERDE%fn", vec![7, 17, 27]),
            ("zqxj", vec![]),
            ("row 1_ ", vec![10, 11, 12]),
        ] {
            let pattern = Pattern::new(term);
            for f in [None, Some(&filter)] {
                let mut out = Vec::new();
                find(
                    &texts,
                    f,
                    &pattern,
                    &mut |_| true,
                    3,
                    &mut out,
                    &Cancel::new(),
                )
                .unwrap();
                assert_eq!(out, expect, "{term} filter={}", f.is_some());
            }
        }
        // `accept` is asked only about matching rows and can refuse them.
        let mut out = Vec::new();
        let mut asked = Vec::new();
        find(
            &texts,
            Some(&filter),
            &Pattern::new("persofi"),
            &mut |r| {
                asked.push(r);
                r != 13
            },
            2,
            &mut out,
            &Cancel::new(),
        )
        .unwrap();
        assert_eq!(out, vec![3, 23]);
        assert_eq!(asked, vec![3, 13, 23]);
        // A stopped scan tests no row, in every path (block filter, whole text, row by row).
        let stopped = Cancel::new();
        stopped.cancel();
        for term in ["persofi", "%", "_"] {
            for f in [None, Some(&filter)] {
                let mut out = Vec::new();
                let mut asked = 0;
                find(
                    &texts,
                    f,
                    &Pattern::new(term),
                    &mut |_| {
                        asked += 1;
                        true
                    },
                    3,
                    &mut out,
                    &stopped,
                )
                .unwrap();
                assert_eq!((asked, out.len()), (0, 0), "{term} filter={}", f.is_some());
            }
        }
    }

    #[test]
    fn broken_offsets_are_errors_not_panics() {
        let text = b"hello world".to_vec();
        for offsets in [vec![0u64, 50], vec![0, 8, 4, 11], vec![5, 2]] {
            let texts = Texts {
                text: &text,
                offsets: &offsets,
            };
            let mut out = Vec::new();
            let r = find(
                &texts,
                None,
                &Pattern::new("o"),
                &mut |_| true,
                5,
                &mut out,
                &Cancel::new(),
            );
            let r2 = find(
                &texts,
                None,
                &Pattern::new("%"),
                &mut |_| true,
                5,
                &mut out,
                &Cancel::new(),
            );
            assert!(r.is_err() || r2.is_err() || out.len() <= 5);
        }
        let offsets = vec![0u64, 50];
        let texts = Texts {
            text: &text,
            offsets: &offsets,
        };
        assert_eq!(texts.row(0), Err(Corrupt));
    }

    #[test]
    fn case_exceptions_give_the_original_prefix_back() {
        for s in [
            "plain lower",
            "Mixed Case ASCII",
            "İstanbul ΣΟΦΙΑ Kelvin \u{212A} Straße ǅemal ﬁle 😀 CAFÉ",
            "",
            &"Ab".repeat(300),
        ] {
            for chars in [0, 1, 5, 200, 10_000] {
                let (mut f, mut case) = (Vec::new(), Vec::new());
                fold_with_case(s, chars, &mut f, &mut case);
                let want: String = s.chars().take(chars).collect();
                assert_eq!(
                    unfold_prefix(&f, &case, chars).unwrap(),
                    want,
                    "{s:?} {chars}"
                );
            }
        }
        assert!(unfold_prefix(b"abc", &[0x80], 3).is_err());
        assert!(unfold_prefix(b"abc", &[0, 0xC3], 3).is_err());
    }
}
