//! BM25 over postings held in memory: FTS5's `bm25()` computed without SQLite, bit
//! for bit, over three weighted columns (in the memories store: title, tags, body).
//!
//! Why: for a query whose OR fallback matches most rows, `bm25()` costs ~85 ms at 100k
//! memories, nearly all of it FTS5 rebuilding each matched row's instance array. The
//! same scores come from postings held in memory in a few milliseconds.
//!
//! Nothing here tokenizes text: the postings, row lengths and table totals are FTS5's
//! own, fed in by the store that reads them ([`FtsIndex::builder`]; the memories
//! store's reader is `stores::memories::fts`).
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

use crate::cancel::Cancel;

/// Postings [`Matches::any_group`] sums between two checks of its stop signal.
pub const STOP_CHECK_POSTINGS: usize = 4096;

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

/// The postings of an FTS5 table, row lengths and table totals; see the module docs.
/// `PartialEq` compares every part (tests check that [`FtsIndex::append`] gives the
/// index a whole read would).
/// Row numbers are indexes into the caller's rows (those given to [`FtsIndex::builder`]).
///
/// Size: 8 bytes per (term, row) pair, 12 per row, plus the terms' text (at 100k
/// generated memories: 4.9M pairs, ~40 MB).
#[derive(Debug, PartialEq)]
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
    /// Per row: D as C computes it (`int nTok` summed over the columns), 0 for rows not
    /// in the FTS5 table; kept so `norm` can follow a new `avgdl`.
    lens: Vec<i32>,
    /// Rows in the FTS5 table (FTS5's `nRow`, from the averages record).
    n_rows: i64,
}

/// Every row's `k1 · (1 − b + b · D / avgdl)` for a table of `n_rows` rows and
/// `n_tokens` tokens, as `fts5Bm25Function` computes it.
fn norms(lens: &[i32], n_rows: i64, n_tokens: i64) -> Vec<f64> {
    #[allow(clippy::cast_precision_loss)] // `(double)nToken / (double)nRow`, as in C
    let avgdl = n_tokens as f64 / n_rows as f64;
    lens.iter()
        .map(|&d| K1 * (1.0 - B + B * f64::from(d) / avgdl))
        .collect()
}

/// Why the index could not be built from a store (the engine then asks SQLite).
pub type Unavailable = &'static str;

/// Builds an [`FtsIndex`] from FTS5's token instances (see [`FtsIndex::builder`]).
#[derive(Debug)]
pub struct FtsIndexBuilder {
    index: FtsIndex,
    /// Tokens per row and column, as the table records them.
    sizes: Vec<Option<[u32; 3]>>,
    /// Instances per row and column seen so far, to check against `sizes`.
    seen: Vec<[u32; 3]>,
    /// The (term, doc) being counted, its row and its count per column.
    term: Option<Vec<u8>>,
    doc: i64,
    row: Option<usize>,
    per_col: [u32; 3],
    /// Only some terms' postings are added ([`FtsIndex::partial`]): the rows' sizes
    /// are not checked against them.
    partial: bool,
}

impl FtsIndexBuilder {
    /// Adds one token instance: `term` in FTS5 row `doc` (`row`: its row in the index,
    /// `None` when the index does not hold it), column `col` (0–2). Instances come in
    /// term then `doc` order, terms strictly increasing bytewise.
    ///
    /// # Errors
    /// Why the instances cannot be indexed (out of order, bad column, too large).
    pub fn instance(
        &mut self,
        t: &[u8],
        d: i64,
        row: Option<usize>,
        col: usize,
    ) -> Result<(), Unavailable> {
        if col >= 3 {
            return Err("unknown column in fts5vocab");
        }
        match self.term.as_deref() {
            Some(cur) if cur == t => {
                if d != self.doc {
                    if d < self.doc {
                        return Err("fts5vocab rowids out of order");
                    }
                    self.index.push_posting(self.row, self.per_col)?;
                    (self.doc, self.row, self.per_col) = (d, row, [0; 3]);
                }
            }
            cur => {
                if let Some(cur) = cur {
                    if t <= cur {
                        return Err("fts5vocab terms out of order");
                    }
                    self.index.push_posting(self.row, self.per_col)?;
                    let cur = cur.to_vec();
                    self.index.end_term(&cur)?;
                }
                self.index.doc_freq.push(0);
                self.term = Some(t.to_vec());
                (self.doc, self.row, self.per_col) = (d, row, [0; 3]);
            }
        }
        self.per_col[col] += 1;
        if let Some(row) = self.row {
            self.seen[row][col] += 1;
        }
        Ok(())
    }

    /// Adds one row's counts of term `t` in each column (`counts`: title, tags, body),
    /// as that many [`FtsIndexBuilder::instance`]s would.
    ///
    /// # Errors
    /// As [`FtsIndexBuilder::instance`].
    pub fn posting(
        &mut self,
        t: &[u8],
        d: i64,
        row: Option<usize>,
        counts: [u32; 3],
    ) -> Result<(), Unavailable> {
        for (col, &n) in counts.iter().enumerate() {
            for _ in 0..n {
                self.instance(t, d, row, col)?;
            }
        }
        Ok(())
    }

    /// The index, once every instance was added.
    ///
    /// # Errors
    /// Why it cannot stand in for the table: the instances per row and column differ
    /// from the sizes, or postings exist in a table said to have no rows.
    pub fn finish(mut self) -> Result<FtsIndex, Unavailable> {
        if let Some(cur) = self.term.take() {
            self.index.push_posting(self.row, self.per_col)?;
            self.index.end_term(&cur)?;
        }
        if !self.partial
            && self
                .seen
                .iter()
                .zip(&self.sizes)
                .any(|(seen, size)| *seen != size.unwrap_or([0; 3]))
        {
            return Err("token counts differ from the table's row sizes");
        }
        let mut index = self.index;
        if !index.rows.is_empty() && index.n_rows <= 0 {
            return Err("FTS5 averages record counts no rows");
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
}

impl FtsIndex {
    /// A builder for an index over `sizes.len()` rows, row `i` holding
    /// `sizes[i]` tokens per column (`None`: not in the FTS5 table), in a table of
    /// `n_rows` rows and `n_tokens` tokens in all (FTS5's averages record).
    pub fn builder(sizes: Vec<Option<[u32; 3]>>, n_rows: i64, n_tokens: i64) -> FtsIndexBuilder {
        let lens: Vec<i32> = sizes
            .iter()
            .map(|s| {
                // `int nTok` summed over the columns, then `(double)nTok`.
                let d = s.map_or(0, |s| s[0].wrapping_add(s[1]).wrapping_add(s[2]));
                #[allow(clippy::cast_possible_wrap)]
                let d = d as i32;
                d
            })
            .collect();
        let norm = norms(&lens, n_rows, n_tokens);
        let mut index = Self {
            term_text: Vec::new(),
            term_ends: Vec::new(),
            starts: vec![0],
            doc_freq: Vec::new(),
            rows: Vec::new(),
            counts: Vec::new(),
            wide: Vec::new(),
            norm,
            lens,
            n_rows,
        };
        // At most one posting per instance: reserving that many (the sizes' total)
        // spares the copies of growing; the surplus is returned by `finish`.
        let instances: usize = sizes
            .iter()
            .flatten()
            .map(|s| s.iter().map(|&c| c as usize).sum::<usize>())
            .sum();
        index.rows.reserve_exact(instances);
        index.counts.reserve_exact(instances);
        let seen = vec![[0; 3]; sizes.len()];
        FtsIndexBuilder {
            index,
            sizes,
            seen,
            term: None,
            doc: 0,
            row: None,
            per_col: [0; 3],
            partial: false,
        }
    }

    /// As [`FtsIndex::builder`], for the postings of some terms only (a query's): every
    /// row of the table that holds one of those terms is added (so their document
    /// frequencies are the table's), the rows' `sizes` are their whole lengths and
    /// `n_rows`, `n_tokens` the whole table's; the rows' sizes are then not checked
    /// against the postings. Scores of those terms are the whole table's, bit for bit.
    pub fn partial(sizes: Vec<Option<[u32; 3]>>, n_rows: i64, n_tokens: i64) -> FtsIndexBuilder {
        let mut b = Self::builder(sizes, n_rows, n_tokens);
        b.partial = true;
        b
    }

    /// Adds the current term's posting in an FTS5 row (`row`: its metadata row, if
    /// any), with its column counts.
    fn push_posting(&mut self, row: Option<usize>, per_col: [u32; 3]) -> Result<(), Unavailable> {
        if let Some(df) = self.doc_freq.last_mut() {
            *df += 1;
        }
        let Some(row) = row else {
            return Ok(());
        };
        let row = u32::try_from(row).map_err(|_| "more rows than fit in 32 bits")?;
        let posting =
            u32::try_from(self.rows.len()).map_err(|_| "more postings than fit in 32 bits")?;
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
    fn end_term(&mut self, term: &[u8]) -> Result<(), Unavailable> {
        let too_big = || "index larger than 32-bit offsets";
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

    /// Number of rows (the caller's rows the index was built over).
    pub fn rows(&self) -> usize {
        self.lens.len()
    }

    /// The index over this one's rows followed by `added`'s (its row `i` becoming row
    /// `self.rows() + i`), in a table now holding `n_rows` rows and `n_tokens` tokens
    /// (the averages record after the rows were added): what [`FtsIndex::builder`]
    /// would build from the whole table, without reading it again. Costs one pass
    /// over the postings (~4.9M at 100k memories).
    ///
    /// # Errors
    /// When the merged index would not fit 32-bit offsets.
    pub fn append(
        &self,
        added: &FtsIndex,
        n_rows: i64,
        n_tokens: i64,
    ) -> Result<FtsIndex, Unavailable> {
        let too_big = || "index larger than 32-bit offsets";
        let base_rows = u32::try_from(self.rows()).map_err(|_| too_big())?;
        let total = self.rows.len() + added.rows.len();
        let mut out = FtsIndex {
            term_text: Vec::with_capacity(self.term_text.len() + added.term_text.len()),
            term_ends: Vec::with_capacity(self.terms() + added.terms()),
            starts: Vec::with_capacity(self.terms() + added.terms() + 1),
            doc_freq: Vec::with_capacity(self.terms() + added.terms()),
            rows: Vec::with_capacity(total),
            counts: Vec::with_capacity(total),
            wide: Vec::with_capacity(self.wide.len() + added.wide.len()),
            norm: Vec::new(),
            lens: self.lens.iter().chain(&added.lens).copied().collect(),
            n_rows,
        };
        out.starts.push(0);
        // Copies term `t`'s postings of `from` (rows shifted by `shift`), with its wide
        // counts (`wide_at`: cursor into `from.wide`, whose postings increase).
        let copy = |out: &mut FtsIndex,
                    from: &FtsIndex,
                    t: usize,
                    shift: u32,
                    wide_at: &mut usize|
         -> Result<(), Unavailable> {
            let range = from.postings_of(t);
            let first = u32::try_from(out.rows.len()).map_err(|_| too_big())?;
            while let Some(&(k, c)) = from.wide.get(*wide_at) {
                if k as usize >= range.end {
                    break;
                }
                out.wide.push((first + (k - range.start as u32), c));
                *wide_at += 1;
            }
            out.rows
                .extend(from.rows[range.clone()].iter().map(|&r| r + shift));
            out.counts.extend_from_slice(&from.counts[range]);
            Ok(())
        };
        let (mut i, mut j) = (0, 0);
        let (mut wide_i, mut wide_j) = (0, 0);
        while i < self.terms() || j < added.terms() {
            let order = match (i < self.terms(), j < added.terms()) {
                (true, true) => self.term(i).cmp(added.term(j)),
                (true, false) => std::cmp::Ordering::Less,
                _ => std::cmp::Ordering::Greater,
            };
            let mut df = 0;
            let term = if order.is_gt() {
                added.term(j)
            } else {
                self.term(i)
            };
            out.term_text.extend_from_slice(term);
            if order.is_le() {
                copy(&mut out, self, i, 0, &mut wide_i)?;
                df += self.doc_freq[i];
                i += 1;
            }
            if order.is_ge() {
                copy(&mut out, added, j, base_rows, &mut wide_j)?;
                df += added.doc_freq[j];
                j += 1;
            }
            out.doc_freq.push(df);
            out.term_ends
                .push(u32::try_from(out.term_text.len()).map_err(|_| too_big())?);
            out.starts
                .push(u32::try_from(out.rows.len()).map_err(|_| too_big())?);
        }
        out.norm = norms(&out.lens, n_rows, n_tokens);
        Ok(out)
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
            + 4 * self.lens.capacity()
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
    /// postings are tried, so this costs little when the AND is rare. Once `stop` has
    /// stopped (checked per term), it returns without calling `f` again.
    pub fn every_group(&self, stop: &Cancel, mut f: impl FnMut(usize, f64)) {
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
                if stop.is_stopped() {
                    return;
                }
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
            if stop.is_stopped() {
                return;
            }
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
    /// every phrase into per-row sums. Once `stop` has stopped (checked every
    /// [`STOP_CHECK_POSTINGS`] postings), it returns without calling `f` again.
    pub fn any_group(&self, stop: &Cancel, mut f: impl FnMut(usize, f64)) {
        let ix = self.index;
        let mut score = vec![0.0f64; ix.norm.len()];
        let mut hit = vec![false; ix.norm.len()];
        // Phrase after phrase, so each row sums its phrases in phrase order.
        for t in self.phrases.iter().filter_map(|p| p.term) {
            let idf = self.idf(t);
            let postings = ix.postings_of(t);
            let mut from = postings.start;
            while from < postings.end {
                if stop.is_stopped() {
                    return;
                }
                let to = postings.end.min(from + STOP_CHECK_POSTINGS);
                for k in from..to {
                    let row = ix.rows[k] as usize;
                    score[row] += ix.phrase_score(idf, &self.weights, k);
                    hit[row] = true;
                }
                from = to;
            }
        }
        if stop.is_stopped() {
            return;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_counts_pack() {
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
}
