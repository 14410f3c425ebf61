//! Prototype of a fast path for `search_conversations`: a newest-first in-memory scan
//! that returns exactly the rows of DuckDB's
//! `WHERE content ILIKE '%' || term || '%' [AND role = ?]
//! ORDER BY created DESC, conversation_id, message_id LIMIT ?`.
//!
//! How: [`NewestFirst::load`] reads every row once, sorted in the engine's order, and
//! keeps the *folded* (lowercased, see [`fold`]) text of all rows in one contiguous
//! buffer. A search walks that buffer from the newest row with SIMD substring search
//! (`memchr::memmem`) and stops as soon as `limit` rows matched, so a term that
//! matches often costs microseconds, and a term that never matches costs one pass over
//! the text at memory speed.
//!
//! Matching rules copied from DuckDB 1.5 (`ILIKE` lowercases both sides, then `LIKE`):
//! - folding is per code point with Unicode *simple* lowercase mappings (utf8proc's
//!   `tolower`), so `İ` (U+0130) folds to `i`, `Σ` always to `σ`, and `K` (Kelvin
//!   sign) to ASCII `k`;
//! - in the folded pattern `%` matches any sequence and `_` exactly one character
//!   (code point: `'caf_s'` matches `cafés`); there is no escape character.
//!
//! This is bench code: it is measured and differentially tested against DuckDB here,
//! and not used by the engine.

use memchr::memmem;

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
            continue;
        }
        // `char::to_lowercase` is the full mapping; it differs from the simple one
        // only for U+0130, whose simple lowercase is plain `i`.
        let lower = if c == '\u{130}' {
            'i'
        } else {
            let mut it = c.to_lowercase();
            match (it.next(), it.next()) {
                (Some(l), None) => l,
                _ => c,
            }
        };
        out.extend_from_slice(lower.encode_utf8(&mut buf).as_bytes());
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

/// Rows of `all_conversations` in the engine's order (newest first), with folded text.
pub struct NewestFirst {
    /// `created` in microseconds since the Unix epoch, per row.
    pub created: Vec<i64>,
    /// `conversation_id` per row.
    pub conversation_id: Vec<String>,
    /// `message_id` per row.
    pub message_id: Vec<String>,
    /// True when the row's role is `user`.
    user: Vec<bool>,
    /// True when the row's role is `assistant`.
    assistant: Vec<bool>,
    /// `has_question = 1` per row.
    question: Vec<bool>,
    /// Folded content of every row, concatenated in row order.
    text: Vec<u8>,
    /// Row `i`'s text is `text[offsets[i]..offsets[i + 1]]`.
    offsets: Vec<usize>,
}

impl NewestFirst {
    /// Reads every row of `all_conversations` through `conn`, in the order
    /// `created DESC, conversation_id, message_id`, folding the content.
    ///
    /// # Errors
    /// The DuckDB error of the query.
    pub fn load(conn: &duckdb::Connection) -> duckdb::Result<Self> {
        let mut stmt = conn.prepare(
            "SELECT epoch_us(created), conversation_id, message_id, role, has_question, content \
             FROM all_conversations ORDER BY created DESC, conversation_id ASC, message_id ASC",
        )?;
        let mut rows = stmt.query([])?;
        let mut out = Self {
            created: Vec::new(),
            conversation_id: Vec::new(),
            message_id: Vec::new(),
            user: Vec::new(),
            assistant: Vec::new(),
            question: Vec::new(),
            text: Vec::new(),
            offsets: vec![0],
        };
        while let Some(row) = rows.next()? {
            out.created.push(row.get(0)?);
            out.conversation_id.push(row.get(1)?);
            out.message_id.push(row.get(2)?);
            let role: String = row.get(3)?;
            out.user.push(role == "user");
            out.assistant.push(role == "assistant");
            out.question.push(row.get::<_, i32>(4)? == 1);
            match row.get_ref(5)? {
                duckdb::types::ValueRef::Text(bytes) => {
                    fold(&String::from_utf8_lossy(bytes), &mut out.text);
                }
                other => {
                    return Err(duckdb::Error::InvalidColumnType(
                        5,
                        "content".into(),
                        other.data_type(),
                    ))
                }
            }
            out.offsets.push(out.text.len());
        }
        out.text.shrink_to_fit();
        Ok(out)
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.created.len()
    }

    /// True when no row was loaded.
    pub fn is_empty(&self) -> bool {
        self.created.is_empty()
    }

    /// Bytes held: folded text plus per-row columns (ids counted by length).
    pub fn heap_bytes(&self) -> usize {
        self.text.capacity()
            + self.offsets.capacity() * 8
            + self.created.capacity() * 8
            + self.user.len() * 3
            + self
                .conversation_id
                .iter()
                .chain(&self.message_id)
                .map(|s| s.capacity() + 24)
                .sum::<usize>()
    }

    fn row_text(&self, i: usize) -> &[u8] {
        &self.text[self.offsets[i]..self.offsets[i + 1]]
    }

    fn role_ok(&self, i: usize, role: Option<&str>) -> bool {
        match role {
            None => true,
            Some("user") => self.user[i],
            Some("assistant") => self.assistant[i],
            Some(_) => false,
        }
    }

    /// The row containing byte `at` of the text buffer.
    fn row_of(&self, at: usize) -> usize {
        self.offsets.partition_point(|&o| o <= at) - 1
    }

    /// Indices of the first `limit` rows (newest first) whose content matches `term`
    /// as `ILIKE '%' || term || '%'` and whose role is `role` (any when `None`).
    pub fn search(&self, term: &str, role: Option<&str>, limit: usize) -> Vec<usize> {
        self.search_in(None, term, role, limit)
    }

    /// Like [`NewestFirst::search`], reading only the blocks of rows that `index` (built
    /// over these rows) cannot rule out. Same rows, same order.
    pub fn search_indexed(
        &self,
        index: &BlockIndex,
        term: &str,
        role: Option<&str>,
        limit: usize,
    ) -> Vec<usize> {
        self.search_in(Some(index), term, role, limit)
    }

    fn search_in(
        &self,
        index: Option<&BlockIndex>,
        term: &str,
        role: Option<&str>,
        limit: usize,
    ) -> Vec<usize> {
        let pattern = Pattern::new(term);
        let mut out = Vec::with_capacity(limit.min(self.len()));
        if limit == 0 {
            return out;
        }
        let anchor = match &pattern {
            Pattern::All => None,
            Pattern::Literal(f) if f.needle().is_empty() => None,
            Pattern::Literal(f) => Some(f),
            Pattern::Wildcard { anchor, .. } => anchor.as_ref(),
        };
        let Some(anchor) = anchor else {
            // No literal to look for: test rows one by one.
            for i in 0..self.len() {
                if self.role_ok(i, role) && pattern.matches(self.row_text(i)) {
                    out.push(i);
                    if out.len() == limit {
                        break;
                    }
                }
            }
            return out;
        };
        let grams = index.map(|ix| pattern.grams(ix.n)).unwrap_or_default();
        match index {
            Some(ix) if !grams.is_empty() => {
                for block in 0..ix.blocks {
                    if !ix.may_contain(block, &grams) {
                        continue;
                    }
                    let first = block * ix.rows_per_block;
                    let last = (first + ix.rows_per_block).min(self.len());
                    let range = self.offsets[first]..self.offsets[last];
                    self.scan_text(&pattern, anchor, role, limit, range, &mut out);
                    if out.len() == limit {
                        break;
                    }
                }
            }
            _ => self.scan_text(&pattern, anchor, role, limit, 0..self.text.len(), &mut out),
        }
        out
    }

    /// Searches `text[range]` (whole rows) for `anchor`, verifying each candidate row
    /// against `pattern` and `role`, appending matching rows until `out` holds `limit`.
    fn scan_text(
        &self,
        pattern: &Pattern,
        anchor: &memmem::Finder<'_>,
        role: Option<&str>,
        limit: usize,
        range: std::ops::Range<usize>,
        out: &mut Vec<usize>,
    ) {
        let needle_len = anchor.needle().len();
        let mut pos = range.start;
        while pos < range.end {
            let Some(hit) = anchor.find(&self.text[pos..range.end]) else {
                break;
            };
            let at = pos + hit;
            let row = self.row_of(at);
            let end = self.offsets[row + 1];
            if at + needle_len > end {
                // The hit straddles two rows: look again just after its start.
                pos = at + 1;
                continue;
            }
            let verified =
                matches!(pattern, Pattern::Literal(_)) || pattern.matches(self.row_text(row));
            if verified && self.role_ok(row, role) {
                out.push(row);
                if out.len() == limit {
                    return;
                }
            }
            pos = end;
        }
    }

    /// Indices of the first `limit` rows (newest first) with role `user` and
    /// `has_question = 1` (the engine's questions mode).
    pub fn questions(&self, limit: usize) -> Vec<usize> {
        (0..self.len())
            .filter(|&i| self.user[i] && self.question[i])
            .take(limit)
            .collect()
    }

    /// The (`conversation_id`, `message_id`) key of row `i`.
    pub fn key(&self, i: usize) -> (&str, &str) {
        (&self.conversation_id[i], &self.message_id[i])
    }
}

/// Bits per block in a [`BlockIndex`] (a power of two).
const BLOCK_BITS: usize = 1 << 16;

/// Hash of one byte 3- or 4-gram into `0..BLOCK_BITS`.
fn gram(w: &[u8]) -> u32 {
    let x = w
        .iter()
        .take(4)
        .enumerate()
        .fold(0u32, |acc, (i, &b)| acc | u32::from(b) << (8 * i));
    x.wrapping_mul(0x9E37_79B1) >> 16
}

/// An n-gram filter per block of rows: for each block of `rows_per_block` consecutive
/// rows (newest first), a 65,536-bit set of the hashed byte n-grams (3 or 4 bytes) of
/// their folded text. A block whose set lacks any n-gram of the pattern cannot hold a
/// match and is skipped; false positives only cost a scan, so results are unchanged.
pub struct BlockIndex {
    n: usize,
    rows_per_block: usize,
    blocks: usize,
    /// `BLOCK_BITS / 64` words per block.
    bits: Vec<u64>,
}

impl BlockIndex {
    /// Builds the filter of `n`-grams (3 or 4; other values are clamped) over `rows`
    /// with blocks of `rows_per_block` rows (≥ 1).
    pub fn build(rows: &NewestFirst, n: usize, rows_per_block: usize) -> Self {
        let n = n.clamp(3, 4);
        let rows_per_block = rows_per_block.max(1);
        let blocks = rows.len().div_ceil(rows_per_block);
        let words = BLOCK_BITS / 64;
        let mut bits = vec![0u64; blocks * words];
        for block in 0..blocks {
            let first = block * rows_per_block;
            let last = (first + rows_per_block).min(rows.len());
            let set = &mut bits[block * words..(block + 1) * words];
            for w in rows.text[rows.offsets[first]..rows.offsets[last]].windows(n) {
                let g = gram(w) as usize;
                set[g / 64] |= 1 << (g % 64);
            }
        }
        Self {
            n,
            rows_per_block,
            blocks,
            bits,
        }
    }

    fn may_contain(&self, block: usize, grams: &[u32]) -> bool {
        let set = &self.bits[block * (BLOCK_BITS / 64)..];
        grams
            .iter()
            .all(|&g| set[g as usize / 64] & (1 << (g % 64)) != 0)
    }

    /// Bytes held by the filter.
    pub fn heap_bytes(&self) -> usize {
        self.bits.len() * 8
    }

    /// Fraction of bits set, over all blocks (0–1; lower filters better).
    pub fn fill(&self) -> f64 {
        let ones: u64 = self.bits.iter().map(|w| u64::from(w.count_ones())).sum();
        #[allow(clippy::cast_precision_loss)] // a ratio for display
        let ratio = ones as f64 / (self.bits.len().max(1) * 64) as f64;
        ratio
    }

    /// Fraction of blocks `term` cannot rule out (1 when it has no n-gram).
    pub fn selectivity(&self, term: &str) -> f64 {
        let grams = Pattern::new(term).grams(self.n);
        if grams.is_empty() || self.blocks == 0 {
            return 1.0;
        }
        let kept = (0..self.blocks)
            .filter(|&b| self.may_contain(b, &grams))
            .count();
        #[allow(clippy::cast_precision_loss)] // a ratio for display
        let ratio = kept as f64 / self.blocks as f64;
        ratio
    }
}

/// The (`conversation_id`, `message_id`) keys DuckDB returns for the engine's query
/// (`ILIKE` mode, or questions mode when `term` is empty and `role` is `user`).
///
/// # Errors
/// The DuckDB error of the query.
pub fn duckdb_keys(
    conn: &duckdb::Connection,
    term: &str,
    role: Option<&str>,
    limit: usize,
) -> duckdb::Result<Vec<(String, String)>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let order = " ORDER BY created DESC, conversation_id ASC, message_id ASC LIMIT ?";
    let map = |r: &duckdb::Row<'_>| Ok((r.get(0)?, r.get(1)?));
    if term.is_empty() && role == Some("user") {
        let sql = format!(
            "SELECT conversation_id, message_id FROM all_conversations \
             WHERE role = 'user' AND has_question = 1{order}"
        );
        let mut stmt = conn.prepare(&sql)?;
        return stmt.query_map(duckdb::params![limit], map)?.collect();
    }
    let mut sql = String::from(
        "SELECT conversation_id, message_id FROM all_conversations \
         WHERE content ILIKE '%' || ? || '%'",
    );
    if let Some(role) = role {
        sql.push_str(" AND role = ?");
        sql.push_str(order);
        let mut stmt = conn.prepare(&sql)?;
        return stmt
            .query_map(duckdb::params![term, role, limit], map)?
            .collect();
    }
    sql.push_str(order);
    let mut stmt = conn.prepare(&sql)?;
    stmt.query_map(duckdb::params![term, limit], map)?.collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::gen::{self, Spec};
    use crate::stores::conversations::ConversationStore;

    fn keys(scan: &NewestFirst, rows: &[usize]) -> Vec<(String, String)> {
        rows.iter()
            .map(|&i| {
                let (c, m) = scan.key(i);
                (c.to_owned(), m.to_owned())
            })
            .collect()
    }

    /// Every probe term, on a generated corpus plus hand-made tricky rows, returns
    /// exactly DuckDB's rows in DuckDB's order.
    #[test]
    fn scan_returns_duckdbs_rows() {
        let store = ConversationStore::open_in_memory().unwrap();
        gen::fill_store(&store, Spec::new(3_000), 1_000).unwrap();
        // Hand-made rows, newer than the generated ones, with case-folding traps.
        let tricky = [
            "Un CAFÉ au lait",
            "café crème",
            "CAFE without accent",
            "cafés en terrasse",
            "İstanbul and istanbul",
            "ΣΟΦΙΑ and σοφία and Σοφίας",
            "Kelvin 5\u{212A}",
            "Straße STRASSE",
            "ǅemal",
            "50% off_sale",
            "a_b and a-b",
            "back\\slash",
            "user_id = 1",
            "ﬁle ligature",
            "emoji 😀 and 🚀",
            "x",
            "",
        ];
        let template = gen::Generator::new(Spec::new(2)).next().unwrap()[0].clone();
        let extra: Vec<_> = tricky
            .iter()
            .enumerate()
            .filter(|(_, t)| !t.is_empty())
            .map(|(i, t)| {
                let mut m = template.clone();
                m.conversation_id = format!("tricky-{i}");
                m.message_id = format!("m-{i}");
                m.content = (*t).to_owned();
                m.timestamp = chrono::DateTime::parse_from_rfc3339("2026-06-01T00:00:00Z")
                    .unwrap()
                    .into();
                m.role = if i % 2 == 0 { "user" } else { "assistant" }.to_owned();
                m
            })
            .collect();
        store.insert(&extra).unwrap();

        let conn = store.connection().unwrap();
        let scan = NewestFirst::load(&conn).unwrap();
        assert_eq!(scan.len(), 3_000 + extra.len());
        let index = BlockIndex::build(&scan, 3, 16);
        let index4 = BlockIndex::build(&scan, 4, 16);
        let terms = [
            "the",
            "serde",
            "async fn",
            "user_id",
            "user%id",
            "persofi",
            gen::ABSENT_TERM,
            "CAFÉ",
            "café",
            "Café",
            "cafe",
            "caf_",
            "caf_s",
            "caf__s",
            "caf%s",
            "İSTANBUL",
            "istanbul",
            "i̇stanbul",
            "ΣΟΦΊΑ",
            "σοφια",
            "σοφία",
            "ς",
            "k",
            "\u{212A}",
            "STRASSE",
            "ß",
            "ǆ",
            "ǅ",
            "ǅemal",
            "file",
            "ﬁ",
            "50%",
            "%",
            "%%",
            "_",
            "__",
            "a_b",
            "a\\_b",
            "back\\slash",
            "\\",
            "😀",
            "🚀 ",
            "_😀",
            "%_%",
            "% off_",
            "e%e%e%e",
            "_x_",
            "",
            "Q",
            "?",
            "```",
            " fn ",
        ];
        let mut mismatches = Vec::new();
        for term in terms {
            for role in [None, Some("user"), Some("assistant")] {
                for limit in [1, 15, 500] {
                    let expected = duckdb_keys(&conn, term, role, limit).unwrap();
                    let got = if term.is_empty() && role == Some("user") {
                        keys(&scan, &scan.questions(limit))
                    } else {
                        keys(&scan, &scan.search(term, role, limit))
                    };
                    let indexed = if term.is_empty() && role == Some("user") {
                        got.clone()
                    } else {
                        keys(&scan, &scan.search_indexed(&index, term, role, limit))
                    };
                    let indexed4 = if term.is_empty() && role == Some("user") {
                        got.clone()
                    } else {
                        keys(&scan, &scan.search_indexed(&index4, term, role, limit))
                    };
                    if expected != got || expected != indexed || expected != indexed4 {
                        mismatches.push(format!(
                            "{term:?} {role:?} {limit}: duckdb {} rows, scan {} rows, indexed {}",
                            expected.len(),
                            got.len(),
                            indexed.len()
                        ));
                    }
                }
            }
        }
        assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
        let expected = duckdb_keys(&conn, "", Some("user"), 50).unwrap();
        assert_eq!(keys(&scan, &scan.questions(50)), expected);
    }

    #[test]
    fn fold_matches_duckdb_lower() {
        let conn = duckdb::Connection::open_in_memory().unwrap();
        for s in [
            "CAFÉ",
            "İstanbul",
            "ΣΟΦΙΑ",
            "K",
            "ẞ",
            "ǅ",
            "Ω",
            "Å",
            "ＡＢＣ",
            "ΆΈΉ",
            "ԱԲԳ",
            "Ⅻ",
            "Ⓐ",
            "𐐀",
        ] {
            let lower: String = conn
                .query_row("SELECT lower(?)", [s], |r| r.get(0))
                .unwrap();
            let mut folded = Vec::new();
            fold(s, &mut folded);
            assert_eq!(String::from_utf8(folded).unwrap(), lower, "{s}");
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
}
