//! An in-memory copy of `memories_fts`'s postings, and FTS5's `bm25()` computed over it.
//!
//! Why: for a query whose OR fallback matches most rows, `bm25()` costs ~85 ms at 100k
//! memories, nearly all of it FTS5 rebuilding each matched row's instance array. The
//! same scores come from postings held in memory in a few milliseconds.
//!
//! Exactness. Nothing here re-tokenizes text; everything is read from FTS5's own data:
//! - postings from an `fts5vocab` table of type `instance` over `memories_fts`
//!   ([`INSTANCE_TABLE`], a per-connection temp table the store creates when it opens):
//!   one row per token instance `(term, rowid, column, offset)`, in term then rowid
//!   order; they are folded into one posting per (term, row) holding the term's count
//!   in each column;
//! - each row's length in tokens from `memories_fts_docsize` (what `xColumnSize`
//!   reads for `bm25()`);
//! - the row count and total token count from the averages record (`memories_fts_data`
//!   id 1; what `xRowCount` and `xColumnTotalSize` read).
//!
//! [`FtsIndex::query`] then follows `fts5Bm25Function` (SQLite 3.54 `sqlite3.c`, from
//! `ext/fts5/fts5_aux.c`) operation by operation, so scores are bit-identical:
//! `idf = ln((N − nHit + 0.5) / (nHit + 0.5))` per phrase (1e-6 when ≤ 0), `aFreq` the
//! sum of the column weights over the phrase's instances in the row (exact: integer
//! weights and counts), `score = Σ idf · (aFreq · (k1 + 1)) / (aFreq + k1 · (1 − b +
//! b · D / avgdl))` summed in phrase order, returned negated like `bm25()`.
//!
//! Query shape: only what the engine generates — single-term phrases (a quoted folded
//! token), OR-ed within a group, groups AND-ed (or OR-ed for the fallback). A term
//! produced by the tokenizer tokenizes to itself again (`tests::
//! tokens_retokenize_to_themselves` checks every code point), so a phrase is exactly
//! its term. Anything else (phrases of several tokens, `NEAR`, prefixes, column
//! filters) is not modelled: the engine never sends them.
//!
//! Guards: the build checks that every row's per-column instance counts equal its
//! `_docsize` entry and that terms come in strictly increasing byte order; if not, the
//! index is unavailable and the engine keeps asking SQLite.

use rusqlite::{Connection, OptionalExtension};

/// The temp `fts5vocab` `instance` table over `memories_fts` that the store creates on
/// each connection (temp objects never touch the database file).
pub const INSTANCE_TABLE: &str = "temp.memories_fts_instance";

/// Statement creating [`INSTANCE_TABLE`]; run before `PRAGMA query_only` on read-only
/// connections (that pragma refuses even temp schema changes).
pub const CREATE_INSTANCE_TABLE: &str = "CREATE VIRTUAL TABLE IF NOT EXISTS \
     temp.memories_fts_instance USING fts5vocab(main, 'memories_fts', 'instance');";

/// Columns of `memories_fts`, in table order (bm25() weights are given in this order).
pub const COLUMNS: [&str; 3] = ["title", "tags", "body"];

/// BM25 constants of `fts5Bm25Function`.
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// Column counts packed in one `u32`: title in bits 24–31, tags in 16–23, body in
/// 0–15. Counts that do not fit are stored in [`FtsIndex::wide`] and marked with
/// [`WIDE`].
const WIDE: u32 = u32::MAX;

fn pack(c: [u32; 3]) -> Option<u32> {
    (c[0] < 0xFF && c[1] < 0xFF && c[2] < 0xFFFF).then_some((c[0] << 24) | (c[1] << 16) | c[2])
}

fn unpack(p: u32) -> [u32; 3] {
    [p >> 24, (p >> 16) & 0xFF, p & 0xFFFF]
}

/// The postings of `memories_fts`, row lengths and table totals; see the module docs.
/// Row numbers are indexes into the owning [`super::SearchIndex`]'s rows.
///
/// Size: 8 bytes per (term, row) pair, 12 per row, plus the terms' text (at 100k
/// generated memories: 4.9M pairs, ~40 MB).
#[derive(Debug)]
pub struct FtsIndex {
    /// Every term's bytes, concatenated in FTS5 order (bytewise increasing).
    term_text: Vec<u8>,
    /// End of term `t` in `term_text` (its start is the previous end).
    term_ends: Vec<u32>,
    /// Term `t`'s postings are `starts[t]..starts[t + 1]`.
    starts: Vec<u32>,
    /// Rows containing term `t` in the FTS5 table (FTS5's `nHit`), counting any row
    /// the metadata lacks.
    doc_freq: Vec<u32>,
    /// Row of each posting, increasing within a term.
    rows: Vec<u32>,
    /// Packed column counts of each posting (see [`pack`]).
    counts: Vec<u32>,
    /// `(posting, counts)` for postings whose counts do not fit, by posting.
    wide: Vec<(u32, [u32; 3])>,
    /// Per row: `k1 · (1 − b + b · D / avgdl)`, the row's part of the BM25 denominator
    /// (D = the row's tokens in all columns); unused for rows not in the FTS5 table.
    norm: Vec<f64>,
    /// Rows in the FTS5 table (FTS5's `nRow`, from the averages record).
    n_rows: i64,
}

/// Why the index could not be built from a store (the engine then asks SQLite).
pub type Unavailable = &'static str;

enum LoadError {
    Sqlite(rusqlite::Error),
    Unavailable(Unavailable),
}

impl From<rusqlite::Error> for LoadError {
    fn from(e: rusqlite::Error) -> Self {
        Self::Sqlite(e)
    }
}

impl From<rusqlite::types::FromSqlError> for LoadError {
    fn from(e: rusqlite::types::FromSqlError) -> Self {
        Self::Sqlite(e.into())
    }
}

impl FtsIndex {
    /// Reads the index through `conn`. `rowids` are the metadata's rows, increasing:
    /// row `i` of the index is FTS5 rowid `rowids[i]` (an FTS5 row they lack still
    /// counts in the table statistics but is never returned). `Ok(Err(why))` when the
    /// store's FTS5 data fails the guards (module docs).
    ///
    /// The caller holds a read transaction, so every part comes from one snapshot.
    ///
    /// # Errors
    /// A SQLite error while reading.
    pub fn load(
        conn: &Connection,
        rowids: &[i64],
    ) -> Result<Result<Self, Unavailable>, rusqlite::Error> {
        let row_of = |rowid: i64| {
            // Rowids are usually dense from the first one: try that slot first.
            let guess = rowids.first().and_then(|f| usize::try_from(rowid - f).ok());
            match guess {
                Some(g) if rowids.get(g) == Some(&rowid) => Some(g),
                _ => rowids.binary_search(&rowid).ok(),
            }
        };
        match Self::read(conn, rowids.len(), &row_of) {
            Ok(index) => Ok(Ok(index)),
            Err(LoadError::Unavailable(why)) => Ok(Err(why)),
            Err(LoadError::Sqlite(e)) => Err(e),
        }
    }

    fn read(
        conn: &Connection,
        n_meta: usize,
        row_of: &impl Fn(i64) -> Option<usize>,
    ) -> Result<Self, LoadError> {
        let mut names = Vec::new();
        let mut stmt = conn.prepare("SELECT name FROM pragma_table_info('memories_fts')")?;
        let mut q = stmt.query([])?;
        while let Some(r) = q.next()? {
            names.push(r.get::<_, String>(0)?);
        }
        if names != COLUMNS {
            return Err(LoadError::Unavailable(
                "memories_fts columns are not title, tags, body",
            ));
        }

        // Table totals, as xRowCount and xColumnTotalSize read them.
        let averages: Option<Vec<u8>> = conn
            .query_row(
                "SELECT block FROM memories_fts_data WHERE id = 1",
                [],
                |r| r.get(0),
            )
            .optional()?;
        let (n_rows, n_tokens) = match averages.as_deref().map(decode_averages) {
            Some(Some(totals)) => totals,
            Some(None) => return Err(LoadError::Unavailable("unreadable FTS5 averages record")),
            None => (0, 0),
        };
        #[allow(clippy::cast_precision_loss)] // `(double)nToken / (double)nRow`, as in C
        let avgdl = n_tokens as f64 / n_rows as f64;

        // Row lengths, as xColumnSize reads them.
        let mut sizes: Vec<Option<[u32; 3]>> = vec![None; n_meta];
        let mut stmt = conn.prepare("SELECT id, sz FROM memories_fts_docsize")?;
        let mut q = stmt.query([])?;
        while let Some(r) = q.next()? {
            let Some(row) = row_of(r.get(0)?) else {
                continue;
            };
            let sz = r.get_ref(1)?.as_blob_or_null()?.and_then(decode_sizes);
            let Some(sz) = sz else {
                return Err(LoadError::Unavailable("unreadable FTS5 docsize record"));
            };
            sizes[row] = Some(sz);
        }
        let norm = sizes
            .iter()
            .map(|s| {
                // `int nTok` summed over the columns, then `(double)nTok`.
                let d = s.map_or(0, |s| s[0].wrapping_add(s[1]).wrapping_add(s[2]));
                #[allow(clippy::cast_possible_wrap)]
                let d = f64::from(d as i32);
                K1 * (1.0 - B + B * d / avgdl)
            })
            .collect();

        let mut index = Self {
            term_text: Vec::new(),
            term_ends: Vec::new(),
            starts: vec![0],
            doc_freq: Vec::new(),
            rows: Vec::new(),
            counts: Vec::new(),
            wide: Vec::new(),
            norm,
            n_rows,
        };
        // At most one posting per instance: reserving that many (the `_docsize`
        // total) spares the copies of growing; the surplus is returned below.
        let instances: usize = sizes
            .iter()
            .flatten()
            .map(|s| s.iter().map(|&c| c as usize).sum::<usize>())
            .sum();
        index.rows.reserve_exact(instances);
        index.counts.reserve_exact(instances);
        // Instances per row and column, to check against `_docsize`.
        let mut seen: Vec<[u32; 3]> = vec![[0; 3]; n_meta];
        let mut stmt = conn.prepare(&format!("SELECT term, doc, col FROM {INSTANCE_TABLE}"))?;
        let mut q = stmt.query([])?;
        // The (term, doc) being counted, its metadata row and its count per column.
        let mut term: Option<Vec<u8>> = None;
        let mut doc: i64 = 0;
        let mut row: Option<usize> = None;
        let mut per_col = [0u32; 3];
        while let Some(r) = q.next()? {
            let t = r.get_ref(0)?.as_bytes()?;
            let d: i64 = r.get(1)?;
            let col = match r.get_ref(2)?.as_bytes()? {
                b"title" => 0,
                b"tags" => 1,
                b"body" => 2,
                _ => return Err(LoadError::Unavailable("unknown column in fts5vocab")),
            };
            match term.as_deref() {
                Some(cur) if cur == t => {
                    if d != doc {
                        if d < doc {
                            return Err(LoadError::Unavailable("fts5vocab rowids out of order"));
                        }
                        index.push_posting(row, per_col)?;
                        (doc, row, per_col) = (d, row_of(d), [0; 3]);
                    }
                }
                cur => {
                    if let Some(cur) = cur {
                        if t <= cur {
                            return Err(LoadError::Unavailable("fts5vocab terms out of order"));
                        }
                        index.push_posting(row, per_col)?;
                        index.end_term(cur)?;
                    }
                    index.doc_freq.push(0);
                    term = Some(t.to_vec());
                    (doc, row, per_col) = (d, row_of(d), [0; 3]);
                }
            }
            per_col[col] += 1;
            if let Some(row) = row {
                seen[row][col] += 1;
            }
        }
        if let Some(cur) = term {
            index.push_posting(row, per_col)?;
            index.end_term(&cur)?;
        }
        if seen
            .iter()
            .zip(&sizes)
            .any(|(seen, size)| *seen != size.unwrap_or([0; 3]))
        {
            return Err(LoadError::Unavailable(
                "token counts differ from memories_fts_docsize",
            ));
        }
        if !index.rows.is_empty() && n_rows <= 0 {
            return Err(LoadError::Unavailable(
                "FTS5 averages record counts no rows",
            ));
        }
        for v in [
            &mut index.term_ends,
            &mut index.starts,
            &mut index.doc_freq,
            &mut index.rows,
            &mut index.counts,
        ] {
            v.shrink_to_fit();
        }
        index.term_text.shrink_to_fit();
        index.wide.shrink_to_fit();
        Ok(index)
    }

    /// Adds the current term's posting in an FTS5 row (`row`: its metadata row, if
    /// any), with its column counts.
    fn push_posting(&mut self, row: Option<usize>, per_col: [u32; 3]) -> Result<(), LoadError> {
        if let Some(df) = self.doc_freq.last_mut() {
            *df += 1;
        }
        let Some(row) = row else {
            return Ok(());
        };
        let row = u32::try_from(row)
            .map_err(|_| LoadError::Unavailable("more rows than fit in 32 bits"))?;
        let posting = u32::try_from(self.rows.len())
            .map_err(|_| LoadError::Unavailable("more postings than fit in 32 bits"))?;
        self.rows.push(row);
        match pack(per_col) {
            Some(p) => self.counts.push(p),
            None => {
                self.counts.push(WIDE);
                self.wide.push((posting, per_col));
            }
        }
        Ok(())
    }

    /// Closes the current term: records its text and where its postings end.
    fn end_term(&mut self, term: &[u8]) -> Result<(), LoadError> {
        let too_big = || LoadError::Unavailable("index larger than 32-bit offsets");
        self.term_text.extend_from_slice(term);
        self.term_ends
            .push(u32::try_from(self.term_text.len()).map_err(|_| too_big())?);
        self.starts
            .push(u32::try_from(self.rows.len()).map_err(|_| too_big())?);
        Ok(())
    }

    /// Number of distinct terms.
    pub fn terms(&self) -> usize {
        self.term_ends.len()
    }

    /// Number of (term, row) postings.
    pub fn postings(&self) -> usize {
        self.rows.len()
    }

    /// Postings whose column counts did not fit the packed form.
    pub fn wide_postings(&self) -> usize {
        self.wide.len()
    }

    /// Term `t`'s bytes.
    fn term(&self, t: usize) -> &[u8] {
        let start = t.checked_sub(1).map_or(0, |p| self.term_ends[p] as usize);
        &self.term_text[start..self.term_ends[t] as usize]
    }

    /// The term numbered `t` in FTS5 order, if `term` is indexed.
    fn find(&self, term: &[u8]) -> Option<usize> {
        let (mut lo, mut hi) = (0, self.term_ends.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.term(mid).cmp(term) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    /// FTS5's IDF of a one-term phrase found in `hits` rows.
    fn idf(&self, hits: i64) -> f64 {
        #[allow(clippy::cast_precision_loss)] // the same conversions as fts5_aux.c
        let idf = (((self.n_rows - hits) as f64 + 0.5) / (hits as f64 + 0.5)).ln();
        if idf <= 0.0 {
            1e-6
        } else {
            idf
        }
    }

    /// The query whose groups are `groups` (each an OR of terms; the groups AND-ed or
    /// OR-ed; its phrases, in order, are the terms group after group), to be scored
    /// with column weights `weights` (title, tags, body) as
    /// `bm25(memories_fts, w0, w1, w2)` scores the rows it matches. Terms are folded
    /// tokens, as the tokenizer emits them; an unindexed term matches nothing.
    pub fn query(&self, groups: &[Vec<String>], weights: [u32; 3]) -> Matches<'_> {
        let phrases = groups
            .iter()
            .enumerate()
            .flat_map(|(g, terms)| terms.iter().map(move |t| (g, t)))
            .map(|(group, t)| Phrase {
                group,
                term: self.find(t.as_bytes()),
            })
            .collect();
        Matches {
            index: self,
            phrases,
            groups: groups.len(),
            weights: weights.map(f64::from),
        }
    }

    /// Term `t`'s postings.
    fn postings_of(&self, t: usize) -> std::ops::Range<usize> {
        self.starts[t] as usize..self.starts[t + 1] as usize
    }

    /// One phrase's term of the BM25 sum for posting `k`, with the phrase's `idf`.
    fn phrase_score(&self, idf: f64, weights: &[f64; 3], k: usize) -> f64 {
        let c = match self.counts[k] {
            WIDE => self.wide_counts(k),
            packed => unpack(packed),
        };
        // `aFreq`: Σ of the weight of each instance's column. Integers, so exact in
        // any order.
        let freq = f64::from(c[0]) * weights[0]
            + f64::from(c[1]) * weights[1]
            + f64::from(c[2]) * weights[2];
        idf * ((freq * (K1 + 1.0)) / (freq + self.norm[self.rows[k] as usize]))
    }

    fn wide_counts(&self, posting: usize) -> [u32; 3] {
        self.wide
            .binary_search_by_key(&posting, |w| w.0 as usize)
            .map_or([0; 3], |i| self.wide[i].1)
    }

    /// Heap bytes held (for reports).
    pub fn heap_bytes(&self) -> usize {
        self.term_text.capacity()
            + 4 * (self.term_ends.capacity()
                + self.starts.capacity()
                + self.doc_freq.capacity()
                + self.rows.capacity()
                + self.counts.capacity())
            + 16 * self.wide.capacity()
            + 8 * self.norm.capacity()
    }
}

/// One phrase of a query: its group and its term (`None`: not indexed).
#[derive(Debug)]
struct Phrase {
    group: usize,
    term: Option<usize>,
}

/// A query over an [`FtsIndex`] (see [`FtsIndex::query`]), scored on demand.
#[derive(Debug)]
pub struct Matches<'a> {
    index: &'a FtsIndex,
    phrases: Vec<Phrase>,
    groups: usize,
    weights: [f64; 3],
}

impl Matches<'_> {
    /// FTS5's IDF of term `t` (as a one-term phrase).
    fn idf(&self, t: usize) -> f64 {
        self.index.idf(i64::from(self.index.doc_freq[t]))
    }

    /// Calls `f(row, bm25)` in row order for every row holding a term of every group
    /// (the AND query). `bm25` is what SQLite's `bm25()` returns for the row: the
    /// negated score (C's `-1.0 * score`, the same bits as `-score`), lower is better. Only the rows of the group with the fewest
    /// postings are tried, so this costs little when the AND is rare.
    pub fn every_group(&self, mut f: impl FnMut(usize, f64)) {
        let ix = self.index;
        let terms_of = |g: usize| {
            self.phrases
                .iter()
                .filter(move |p| p.group == g)
                .filter_map(|p| p.term)
        };
        let Some(driver) = (0..self.groups)
            .min_by_key(|&g| terms_of(g).map(|t| ix.postings_of(t).len()).sum::<usize>())
        else {
            return;
        };
        let mut rows: Vec<u32> = terms_of(driver)
            .flat_map(|t| ix.rows[ix.postings_of(t)].iter().copied())
            .collect();
        rows.sort_unstable();
        rows.dedup();
        for g in (0..self.groups).filter(|&g| g != driver) {
            let mut held = vec![false; rows.len()];
            for t in terms_of(g) {
                let post = &ix.rows[ix.postings_of(t)];
                let mut at = 0;
                for (i, &row) in rows.iter().enumerate() {
                    at = seek(post, at, row);
                    if at == post.len() {
                        break;
                    }
                    held[i] |= post[at] == row;
                }
            }
            rows = rows
                .iter()
                .zip(&held)
                .filter(|(_, h)| **h)
                .map(|(r, _)| *r)
                .collect();
        }
        if rows.is_empty() {
            return;
        }
        // Phrase after phrase, so each row sums its phrases in phrase order.
        let mut score = vec![0.0f64; rows.len()];
        for t in self.phrases.iter().filter_map(|p| p.term) {
            let (idf, range) = (self.idf(t), ix.postings_of(t));
            let post = &ix.rows[range.clone()];
            let mut at = 0;
            for (i, &row) in rows.iter().enumerate() {
                at = seek(post, at, row);
                if at == post.len() {
                    break;
                }
                if post[at] == row {
                    score[i] += ix.phrase_score(idf, &self.weights, range.start + at);
                }
            }
        }
        for (&row, &score) in rows.iter().zip(&score) {
            f(row as usize, -score);
        }
    }

    /// Calls `f(row, bm25)` in row order for every row holding a term of any group
    /// (the OR query); `bm25` as in [`Matches::every_group`]. Walks every posting of
    /// every phrase into per-row sums.
    pub fn any_group(&self, mut f: impl FnMut(usize, f64)) {
        let ix = self.index;
        let mut score = vec![0.0f64; ix.norm.len()];
        let mut hit = vec![false; ix.norm.len()];
        // Phrase after phrase, so each row sums its phrases in phrase order.
        for t in self.phrases.iter().filter_map(|p| p.term) {
            let idf = self.idf(t);
            for k in ix.postings_of(t) {
                let row = ix.rows[k] as usize;
                score[row] += ix.phrase_score(idf, &self.weights, k);
                hit[row] = true;
            }
        }
        for (row, (&hit, &score)) in hit.iter().zip(&score).enumerate() {
            if hit {
                f(row, -score);
            }
        }
    }
}

/// The first index from `from` on whose row is ≥ `target` in increasing `rows`
/// (`rows.len()` if none), found by galloping: cheap for nearby targets.
fn seek(rows: &[u32], from: usize, target: u32) -> usize {
    let (mut lo, mut hi, mut step) = (from, from, 1);
    while hi < rows.len() && rows[hi] < target {
        lo = hi + 1;
        hi += step;
        step *= 2;
    }
    let hi = hi.min(rows.len());
    lo + rows[lo..hi].partition_point(|&r| r < target)
}

/// SQLite's varint (as `sqlite3Fts5GetVarint`): value and length, `None` if cut short.
fn varint(buf: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for i in 0..8 {
        let b = *buf.get(i)?;
        v = (v << 7) | u64::from(b & 0x7F);
        if b & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    Some(((v << 8) | u64::from(*buf.get(8)?), 9))
}

/// The averages record: `(nRow, Σ column totals)`, as `sqlite3Fts5IndexGetAverages`
/// and `sqlite3Fts5StorageSize(-1)` read it (missing trailing columns count 0).
fn decode_averages(blob: &[u8]) -> Option<(i64, i64)> {
    if blob.is_empty() {
        return Some((0, 0));
    }
    let (n_rows, mut at) = varint(blob)?;
    let mut total = 0i64;
    for _ in 0..COLUMNS.len() {
        if at >= blob.len() {
            break;
        }
        let (size, len) = varint(&blob[at..])?;
        #[allow(clippy::cast_possible_wrap)] // C reads them as `u64` into `i64`
        {
            total = total.wrapping_add(size as i64);
        }
        at += len;
    }
    #[allow(clippy::cast_possible_wrap)]
    Some((n_rows as i64, total))
}

/// A `_docsize` record: the row's token count per column, `None` unless it holds
/// exactly one varint per column (`fts5StorageDecodeSizeArray`).
fn decode_sizes(blob: &[u8]) -> Option<[u32; 3]> {
    let mut sizes = [0u32; 3];
    let mut at = 0;
    for s in &mut sizes {
        let (v, len) = varint(blob.get(at..)?)?;
        #[allow(clippy::cast_possible_truncation)] // `fts5GetVarint32` keeps 32 bits
        {
            *s = v as u32;
        }
        at += len;
    }
    (at == blob.len()).then_some(sizes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_records() {
        assert_eq!(varint(&[0x05]), Some((5, 1)));
        assert_eq!(varint(&[0x86, 0x8D, 0x20]), Some((100_000, 3)));
        assert_eq!(varint(&[0x81]), None);
        assert_eq!(varint(&[0xFF; 9]), Some((u64::MAX, 9)));
        // nRow 100000, then title, tags, body totals.
        let avg = [134, 141, 32, 161, 245, 21, 143, 145, 9, 130, 195, 180, 125];
        assert_eq!(
            decode_averages(&avg),
            Some((100_000, 555_669 + 247_945 + 5_298_813))
        );
        assert_eq!(
            decode_averages(&[0x02, 0x07]),
            Some((2, 7)),
            "missing columns are 0"
        );
        assert_eq!(decode_sizes(&[3, 0, 0x81, 0x00]), Some([3, 0, 128]));
        assert_eq!(decode_sizes(&[3, 0]), None);
        assert_eq!(decode_sizes(&[3, 0, 1, 9]), None, "trailing bytes");
        assert_eq!(unpack(pack([254, 3, 65_534]).unwrap()), [254, 3, 65_534]);
        assert_eq!(pack([255, 0, 0]), None);
        assert_eq!(pack([0, 0, 65_535]), None);
    }

    #[test]
    fn seek_gallops_to_the_first_row_not_below() {
        let rows = [2, 3, 5, 8, 13, 21, 34, 55];
        for from in 0..=rows.len() {
            for target in 0..60 {
                let want = (from..rows.len())
                    .find(|&i| rows[i] >= target)
                    .unwrap_or(rows.len());
                assert_eq!(seek(&rows, from, target), want, "{from} {target}");
            }
        }
    }

    /// Every term the tokenizer emits tokenizes to itself again, so the quoted term in
    /// the engine's `MATCH` text is a one-term phrase of exactly that term. Checked
    /// for every Unicode scalar value, alone (a token's first character) and between
    /// two `x` (any later character); a SQLite upgrade that changes this fails here.
    #[test]
    fn tokens_retokenize_to_themselves() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE VIRTUAL TABLE t USING fts5(x, tokenize = 'unicode61 remove_diacritics 2');
             CREATE VIRTUAL TABLE t_row USING fts5vocab(t, 'row');
             CREATE VIRTUAL TABLE t_inst USING fts5vocab(t, 'instance');",
        )
        .unwrap();
        let mut doc = String::new();
        for c in (1..=0x10_FFFF_u32).filter_map(char::from_u32) {
            doc.extend([c, ' ', 'x', c, 'x', ' ']);
        }
        conn.execute("INSERT INTO t(rowid, x) VALUES (1, ?1)", [&doc])
            .unwrap();
        let terms: Vec<String> = conn
            .prepare("SELECT term FROM t_row")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(terms.len() > 100_000, "{}", terms.len());
        conn.execute("DELETE FROM t", []).unwrap();
        conn.execute("INSERT INTO t(rowid, x) VALUES (2, ?1)", [terms.join(" ")])
            .unwrap();
        let again: Vec<String> = conn
            .prepare("SELECT term FROM t_inst ORDER BY offset")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let first_difference = terms.iter().zip(&again).position(|(a, b)| a != b);
        assert_eq!(first_difference, None);
        assert_eq!(terms.len(), again.len());
    }
}
