//! BM25 postings over rows of folded text: built once when a segment of the
//! conversations index is written, read in place from its memory map, scored per query.
//!
//! ## Encoding
//!
//! Terms are the [`stem`]s of the [`words`] of a row that pass [`is_term`] (the words of
//! one stem share a list, their counts added), sorted bytewise and stored as a string
//! table (`u64` offsets, one more than terms, and the bytes). Each term's list is a
//! byte run (`u64` offsets, one more than terms) of LEB128 varints: the number of
//! rows holding the term (its document frequency), then per row, in ascending row
//! order, `2 × gap + (tf > 1)` followed by `tf` when `tf > 1` (`gap` is the row minus
//! the previous row of the list, the first row counted from 0). A row's length is its
//! number of [`words`] (stop words, short and overlong words included), saturated at
//! `u16::MAX`. Nothing read is trusted: a bad offset, varint or row is [`Corrupt`].
//!
//! ## Scoring
//!
//! Okapi BM25 with Lucene's non-negative idf:
//! `Σ idf(t) · tf · (k1 + 1) / (tf + k1 · (1 − b + b · len / avglen))`,
//! `idf(t) = ln(1 + (N − df + 0.5) / (df + 0.5))`, [`K1`] 1.2, [`B`] 0.4. `N`, `df` and
//! `avglen` are the statistics of every segment searched together ([`Stats`]), so one
//! query scores alike in every segment.

use std::collections::HashMap;

use super::scan::{Corrupt, Texts};
use super::words::{is_term, stem, words};

/// BM25 term-frequency saturation.
pub const K1: f64 = 1.2;
/// BM25 length normalisation: lower than the textbook 0.75 because rows are chat
/// messages, mostly a line or two, where a longer turn is not a weaker match as a
/// longer document is. Chosen on the LoCoMo dev half (docs/performance.md,
/// "semantic_search"): 0.75 → 0.4 lifted hybrid turn R@5 from 57.6 % to 59.4 %.
pub const B: f64 = 0.4;

/// The postings of a set of rows, encoded ([module docs](self)), ready to be written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Built {
    /// Offsets of the terms in `terms` (terms + 1 entries, starting at 0).
    pub term_offsets: Vec<u64>,
    /// The sorted terms, concatenated.
    pub terms: Vec<u8>,
    /// Offsets of each term's list in `lists` (terms + 1 entries, starting at 0).
    pub list_offsets: Vec<u64>,
    /// The lists, concatenated.
    pub lists: Vec<u8>,
    /// Words per row, saturated at `u16::MAX`.
    pub lengths: Vec<u16>,
    /// Words of all rows (not saturated).
    pub total_length: u64,
}

/// The list id of a word [`is_term`] leaves out.
const NOT_INDEXED: u32 = u32::MAX;

#[derive(Default)]
struct ListBuilder {
    /// The term: the [`stem`] shared by every word posted in this list.
    term: String,
    df: u32,
    next: u32,
    bytes: Vec<u8>,
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        #[allow(clippy::cast_possible_truncation)] // the low 7 bits
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    #[allow(clippy::cast_possible_truncation)] // < 0x80
    out.push(v as u8);
}

/// The varint at `*at` of `b`, advancing `*at`.
fn get_varint(b: &[u8], at: &mut usize) -> Result<u64, Corrupt> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*at).ok_or(Corrupt)?;
        *at += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return Ok(v);
        }
    }
    Err(Corrupt)
}

/// Builds the postings of every row of `texts` (folded UTF-8 text).
///
/// # Errors
/// [`Corrupt`] when the offsets do not describe the text, a row is not UTF-8, or there
/// are more than `u32::MAX` rows.
pub fn build(texts: &Texts<'_>) -> Result<Built, Corrupt> {
    let n = texts.len();
    if u32::try_from(n).is_err() {
        return Err(Corrupt);
    }
    // Word → list id, so `is_term` and `stem` run once per distinct word, not once per
    // occurrence; stem → list id, so the words of one stem share a list.
    let mut ids: HashMap<&[u8], u32, foldhash::fast::FixedState> = HashMap::default();
    let mut stems: HashMap<String, u32, foldhash::fast::FixedState> = HashMap::default();
    let mut lists: Vec<ListBuilder> = Vec::new();
    let mut lengths = Vec::with_capacity(n);
    let mut total_length = 0u64;
    let mut row_terms: Vec<u32> = Vec::new();
    for row in 0..n {
        let text = std::str::from_utf8(texts.row(row)?).map_err(|_| Corrupt)?;
        row_terms.clear();
        let mut len = 0u64;
        for w in words(text) {
            len += 1;
            if w.len() > super::words::MAX_BYTES {
                continue;
            }
            let id = match ids.get(w.as_bytes()) {
                Some(&id) => id,
                None => {
                    let id = if is_term(w) {
                        let next_id = u32::try_from(lists.len())
                            .ok()
                            .filter(|&i| i != NOT_INDEXED)
                            .ok_or(Corrupt)?;
                        *stems
                            .entry(stem(w).into_owned())
                            .or_insert_with_key(|term| {
                                lists.push(ListBuilder {
                                    term: term.clone(),
                                    ..ListBuilder::default()
                                });
                                next_id
                            })
                    } else {
                        NOT_INDEXED
                    };
                    ids.insert(w.as_bytes(), id);
                    id
                }
            };
            if id != NOT_INDEXED {
                row_terms.push(id);
            }
        }
        row_terms.sort_unstable();
        #[allow(clippy::cast_possible_truncation)] // n ≤ u32::MAX, checked above
        let r = row as u32;
        for run in row_terms.chunk_by(|a, b| a == b) {
            let list = &mut lists[run[0] as usize];
            let gap = u64::from(r - list.next);
            let tf = run.len() as u64;
            put_varint(&mut list.bytes, 2 * gap + u64::from(tf > 1));
            if tf > 1 {
                put_varint(&mut list.bytes, tf);
            }
            list.df += 1;
            list.next = r;
        }
        lengths.push(u16::try_from(len).unwrap_or(u16::MAX));
        total_length += len;
    }
    drop(ids);
    lists.sort_unstable_by(|a, b| a.term.as_bytes().cmp(b.term.as_bytes()));
    let mut out = Built {
        term_offsets: Vec::with_capacity(lists.len() + 1),
        list_offsets: Vec::with_capacity(lists.len() + 1),
        lengths,
        total_length,
        ..Built::default()
    };
    out.term_offsets.push(0);
    out.list_offsets.push(0);
    for list in lists {
        out.terms.extend_from_slice(list.term.as_bytes());
        out.term_offsets.push(out.terms.len() as u64);
        put_varint(&mut out.lists, u64::from(list.df));
        out.lists.extend_from_slice(&list.bytes);
        out.list_offsets.push(out.lists.len() as u64);
    }
    Ok(out)
}

/// The terms of single rows as [`build`] posts them, for a writer that keeps them row
/// by row (the team archive's keyword leg, `crate::archive::keyword`): a row's length
/// (its [`words`], unsaturated) and each of its terms (the [`stem`] of a word passing
/// [`is_term`], at most [`super::words::MAX_BYTES`] bytes) with its count, sorted
/// bytewise. Words seen before are not stemmed again.
#[derive(Debug, Default)]
pub struct RowTerms {
    /// Word → its term (`None`: not indexed).
    seen: HashMap<String, Option<String>, foldhash::fast::FixedState>,
}

/// Distinct words a [`RowTerms`] remembers before it starts over (bounds its memory).
const ROW_TERMS_WORDS: usize = 200_000;

impl RowTerms {
    /// `(length, terms with their counts)` of the folded text `text`.
    pub fn of(&mut self, text: &str) -> (u64, Vec<(String, u32)>) {
        if self.seen.len() > ROW_TERMS_WORDS {
            self.seen.clear();
        }
        let mut len = 0u64;
        let mut owned: Vec<String> = Vec::new();
        for w in words(text) {
            len += 1;
            if w.len() > super::words::MAX_BYTES {
                continue;
            }
            if !self.seen.contains_key(w) {
                let t = is_term(w).then(|| stem(w).into_owned());
                self.seen.insert(w.to_owned(), t);
            }
            if let Some(Some(t)) = self.seen.get(w) {
                owned.push(t.clone());
            }
        }
        owned.sort_unstable_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
        let out = owned
            .chunk_by(|a, b| a == b)
            .map(|run| (run[0].clone(), u32::try_from(run.len()).unwrap_or(u32::MAX)))
            .collect();
        (len, out)
    }
}

/// Postings read in place (the slices of a [`Built`] as a segment file holds them).
#[derive(Debug, Clone, Copy)]
pub struct Postings<'a> {
    /// As [`Built::term_offsets`].
    pub term_offsets: &'a [u64],
    /// As [`Built::terms`].
    pub terms: &'a [u8],
    /// As [`Built::list_offsets`].
    pub list_offsets: &'a [u64],
    /// As [`Built::lists`].
    pub lists: &'a [u8],
    /// As [`Built::lengths`]: one per row.
    pub lengths: &'a [u16],
    /// As [`Built::total_length`].
    pub total_length: u64,
}

/// One term's list inside [`Postings`].
#[derive(Debug, Clone, Copy)]
pub struct List<'a> {
    /// Rows holding the term.
    pub df: u32,
    bytes: &'a [u8],
    rows: usize,
}

impl List<'_> {
    /// Calls `f(row, tf)` for every row of the list, in ascending row order.
    ///
    /// # Errors
    /// [`Corrupt`] when the list does not decode to `df` ascending rows inside the
    /// segment.
    pub fn for_each(&self, mut f: impl FnMut(usize, u32)) -> Result<(), Corrupt> {
        let at = self.walk(|r, tf| {
            f(r, tf);
            true
        })?;
        if at == self.bytes.len() {
            Ok(())
        } else {
            Err(Corrupt)
        }
    }

    /// Calls `f(row)` for the rows of the list in ascending order until it returns
    /// false (what a search that stops at its limit needs; the rest is not decoded).
    ///
    /// # Errors
    /// [`Corrupt`] when the decoded part of the list is not ascending rows inside the
    /// segment.
    pub fn rows_while(&self, mut f: impl FnMut(usize) -> bool) -> Result<(), Corrupt> {
        self.walk(|r, _| f(r)).map(|_| ())
    }

    /// Decodes the list, calling `f(row, tf)` per entry until it returns false; the
    /// byte offset reached.
    fn walk(&self, mut f: impl FnMut(usize, u32) -> bool) -> Result<usize, Corrupt> {
        let (mut at, mut row) = (0usize, 0u64);
        for i in 0..self.df {
            let v = get_varint(self.bytes, &mut at)?;
            let gap = v >> 1;
            if i > 0 && gap == 0 {
                return Err(Corrupt);
            }
            row = row.checked_add(gap).ok_or(Corrupt)?;
            let tf = if v & 1 == 1 {
                let tf = get_varint(self.bytes, &mut at)?;
                u32::try_from(tf).ok().filter(|&t| t > 1).ok_or(Corrupt)?
            } else {
                1
            };
            let r = usize::try_from(row).map_err(|_| Corrupt)?;
            if r >= self.rows {
                return Err(Corrupt);
            }
            if !f(r, tf) {
                break;
            }
        }
        Ok(at)
    }
}

impl<'a> Postings<'a> {
    /// The postings of `built`, borrowed.
    pub fn of(built: &'a Built) -> Self {
        Self {
            term_offsets: &built.term_offsets,
            terms: &built.terms,
            list_offsets: &built.list_offsets,
            lists: &built.lists,
            lengths: &built.lengths,
            total_length: built.total_length,
        }
    }

    /// Rows.
    pub fn rows(&self) -> usize {
        self.lengths.len()
    }

    /// Distinct terms.
    pub fn terms(&self) -> usize {
        self.term_offsets.len().saturating_sub(1)
    }

    fn slice<'s>(offsets: &[u64], bytes: &'s [u8], i: usize) -> Result<&'s [u8], Corrupt> {
        let a = usize::try_from(*offsets.get(i).ok_or(Corrupt)?).map_err(|_| Corrupt)?;
        let b = usize::try_from(*offsets.get(i + 1).ok_or(Corrupt)?).map_err(|_| Corrupt)?;
        bytes.get(a..b).ok_or(Corrupt)
    }

    /// The `i`-th term (bytewise order).
    ///
    /// # Errors
    /// [`Corrupt`] when the term table is damaged.
    pub fn term(&self, i: usize) -> Result<&'a [u8], Corrupt> {
        Self::slice(self.term_offsets, self.terms, i)
    }

    /// The list of `term`, found by binary search; `None` when no row holds it.
    ///
    /// # Errors
    /// [`Corrupt`] when the term table or the list's header is damaged.
    pub fn list(&self, term: &str) -> Result<Option<List<'a>>, Corrupt> {
        let (mut lo, mut hi) = (0usize, self.terms());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.term(mid)?.cmp(term.as_bytes()) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => {
                    let bytes = Self::slice(self.list_offsets, self.lists, mid)?;
                    let mut at = 0;
                    let df = u32::try_from(get_varint(bytes, &mut at)?).map_err(|_| Corrupt)?;
                    return Ok(Some(List {
                        df,
                        bytes: &bytes[at..],
                        rows: self.rows(),
                    }));
                }
            }
        }
        Ok(None)
    }
}

/// Collection statistics of the segments one query searches together.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stats {
    /// Rows (`N`).
    pub rows: u64,
    /// Words of all rows.
    pub total_length: u64,
}

impl Stats {
    /// Mean words per row (1 when there are no rows, so scores stay finite).
    pub fn avg_length(&self) -> f64 {
        if self.rows == 0 || self.total_length == 0 {
            1.0
        } else {
            #[allow(clippy::cast_precision_loss)]
            let avg = self.total_length as f64 / self.rows as f64;
            avg
        }
    }
}

/// BM25's idf of a term held by `df` of `rows` rows (never negative).
pub fn idf(rows: u64, df: u64) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let (n, df) = (rows as f64, df as f64);
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

/// BM25 of one term occurrence count `tf` in a row of `len` words.
pub fn term_score(idf: f64, tf: u32, len: u16, avg_length: f64) -> f64 {
    let tf = f64::from(tf);
    let norm = K1 * (1.0 - B + B * f64::from(len) / avg_length);
    idf * tf * (K1 + 1.0) / (tf + norm)
}

/// The `k` best rows of one segment for the query terms' `lists` in it (each with the
/// term's idf from the shared [`Stats`]): `(score, row)`, best first, ties in ascending
/// row order. Only rows holding a term and passing `accept` are scored.
///
/// # Errors
/// [`Corrupt`] when a list is damaged or holds a row `postings` has no length for.
pub fn top_rows(
    postings: &Postings<'_>,
    lists: &[(List<'_>, f64)],
    avg_length: f64,
    k: usize,
    mut accept: impl FnMut(usize) -> bool,
) -> Result<Vec<(f64, usize)>, Corrupt> {
    if k == 0 {
        return Ok(Vec::new());
    }
    let acc = Accumulated::of(postings, lists, avg_length, false)?;
    let ranked: Vec<(f64, usize)> = acc
        .touched
        .iter()
        .map(|&r| r as usize)
        .filter(|&r| accept(r))
        .map(|r| (acc.scores[r], r))
        .collect();
    Ok(best_k(ranked, k, |x| x.0, |x| x.1))
}

/// How a row's neighbours (the messages around it in its conversation) count in its
/// keyword score ([`top_rows_in_context`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Spread {
    /// The row's own BM25 plus `weight` × the sum of its neighbours' own BM25 scores.
    Sum {
        /// Weight of each neighbour's score (0: the row alone).
        weight: f64,
    },
    /// BM25 of one context document per row: its own words plus `weight` × each
    /// neighbour's (term counts and lengths), scored against a mean length of
    /// `(1 + weight · neighbours) ×` the rows' mean (1: plain concatenation).
    Document {
        /// Weight of a neighbour's words in the document (0: the row alone).
        weight: f64,
    },
}

/// Seeds per result of [`top_rows_in_context`]: only the touched rows with the
/// `k × CONTEXT_SEEDS` best own scores (at least [`CONTEXT_SEEDS_FLOOR`]) and their
/// neighbours are scored in context. On LoCoMo no query touches that many rows, so the
/// ranking there is exact; at 1M messages it bounds the work of a common word.
pub const CONTEXT_SEEDS: usize = 32;
/// The fewest seeds of [`top_rows_in_context`].
pub const CONTEXT_SEEDS_FLOOR: usize = 2048;

/// A row scored in context by [`top_rows_in_context`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContextScore {
    /// The ranking score: the row's BM25 with its neighbours ([`Spread`]).
    pub score: f64,
    /// The row's own BM25 (0 when only its neighbours hold query terms).
    pub own: f64,
    /// The row.
    pub row: usize,
}

/// As [`top_rows`], with each row scored together with its neighbours: `neighbours(row,
/// out)` pushes the rows around `row` (same conversation, up to a window each side) onto
/// `out`. A row that holds no query term but sits next to rows that do is ranked too
/// (it must still pass `accept`; neighbours count whether they pass it or not). Best
/// first, ties in ascending row order.
///
/// # Errors
/// [`Corrupt`] when a list is damaged or holds a row `postings` has no length for.
pub fn top_rows_in_context(
    postings: &Postings<'_>,
    lists: &[(List<'_>, f64)],
    avg_length: f64,
    k: usize,
    spread: Spread,
    mut neighbours: impl FnMut(usize, &mut Vec<usize>),
    mut accept: impl FnMut(usize) -> bool,
) -> Result<Vec<ContextScore>, Corrupt> {
    if k == 0 {
        return Ok(Vec::new());
    }
    let document = matches!(spread, Spread::Document { .. });
    let acc = Accumulated::of(postings, lists, avg_length, document)?;
    // Seeds: the touched rows with the best own scores, at most [`CONTEXT_SEEDS`] per
    // result (a common word touches most rows of a large segment; a row ranked by its
    // neighbours sits next to a seed). Candidates: the seeds and their neighbours.
    let cap = k.saturating_mul(CONTEXT_SEEDS).max(CONTEXT_SEEDS_FLOOR);
    let mut seeds = acc.touched.clone();
    if seeds.len() > cap {
        seeds.select_nth_unstable_by(cap - 1, |&a, &b| {
            acc.scores[b as usize].total_cmp(&acc.scores[a as usize])
        });
        seeds.truncate(cap);
    }
    let mut around: Vec<usize> = Vec::new();
    let mut seen = vec![0u64; postings.rows().div_ceil(64)];
    let mut candidates: Vec<usize> = Vec::with_capacity(acc.touched.len() * 3);
    let mut add = |r: usize, candidates: &mut Vec<usize>| {
        if let Some(w) = seen.get_mut(r / 64) {
            if *w & (1 << (r % 64)) == 0 {
                *w |= 1 << (r % 64);
                candidates.push(r);
            }
        }
    };
    for &t in &seeds {
        let t = t as usize;
        add(t, &mut candidates);
        around.clear();
        neighbours(t, &mut around);
        for &n in &around {
            add(n, &mut candidates);
        }
    }
    let mut scored = Vec::with_capacity(candidates.len());
    let mut tf: Vec<f64> = Vec::with_capacity(lists.len());
    for r in candidates {
        if !accept(r) {
            continue;
        }
        around.clear();
        neighbours(r, &mut around);
        let own = acc.scores.get(r).copied().unwrap_or(0.0);
        let score = match spread {
            Spread::Sum { weight } => {
                own + weight
                    * around
                        .iter()
                        .map(|&n| acc.scores.get(n).copied().unwrap_or(0.0))
                        .sum::<f64>()
            }
            Spread::Document { weight } => {
                acc.document_score(postings, lists, r, &around, weight, avg_length, &mut tf)?
            }
        };
        if score > 0.0 {
            scored.push(ContextScore { score, own, row: r });
        }
    }
    Ok(best_k(scored, k, |x| x.score, |x| x.row))
}

/// The `k` best of `items` by `score` (descending), ties by `row` (ascending), sorted.
fn best_k<T>(
    mut items: Vec<T>,
    k: usize,
    score: impl Fn(&T) -> f64,
    row: impl Fn(&T) -> usize,
) -> Vec<T> {
    let better = |a: &T, b: &T| score(b).total_cmp(&score(a)).then(row(a).cmp(&row(b)));
    if items.len() > k {
        items.select_nth_unstable_by(k - 1, better);
        items.truncate(k);
    }
    items.sort_unstable_by(better);
    items
}

/// Per-row BM25 sums of one segment for a query (term at a time), with the rows
/// touched and, when asked, each touched row's term counts.
struct Accumulated {
    /// Own BM25 per row (0 for rows no term touches).
    scores: Vec<f64>,
    /// Rows with a positive score, in the order first touched.
    touched: Vec<u32>,
    /// For [`Spread::Document`] only: per row, 1 + its index in `touched` (0: not
    /// touched), so its counts are `counts[i·terms..(i+1)·terms]`. Dense arrays, no
    /// hashing: a common word touches a large share of the rows.
    slot: Vec<u32>,
    /// Term counts of the touched rows, `terms` per row (saturated at `u16::MAX`).
    counts: Vec<u16>,
    /// Terms per row in `counts`.
    terms: usize,
}

impl Accumulated {
    fn of(
        postings: &Postings<'_>,
        lists: &[(List<'_>, f64)],
        avg_length: f64,
        counts: bool,
    ) -> Result<Self, Corrupt> {
        // Dense accumulators: a query's common words touch up to every row, and an
        // array beats a hash map there; untouched pages of the zeroed allocation cost
        // nothing.
        let mut acc = Self {
            scores: vec![0f64; postings.rows()],
            touched: Vec::new(),
            slot: if counts {
                vec![0u32; postings.rows()]
            } else {
                Vec::new()
            },
            counts: Vec::new(),
            terms: lists.len(),
        };
        for (ti, &(list, idf)) in lists.iter().enumerate() {
            // A zero score marks an untouched row, so only positive idfs may add.
            if !(idf > 0.0 && idf.is_finite()) {
                continue;
            }
            let mut bad = false;
            list.for_each(|row, tf| {
                let Some(&len) = postings.lengths.get(row) else {
                    bad = true;
                    return;
                };
                if acc.scores[row] == 0.0 {
                    #[allow(clippy::cast_possible_truncation)] // rows ≤ u32::MAX when built
                    acc.touched.push(row as u32);
                    if counts {
                        #[allow(clippy::cast_possible_truncation)]
                        let at = acc.touched.len() as u32;
                        acc.slot[row] = at;
                        acc.counts.resize(acc.counts.len() + acc.terms, 0);
                    }
                }
                acc.scores[row] += term_score(idf, tf, len, avg_length);
                if counts {
                    let at = (acc.slot[row] as usize - 1) * acc.terms + ti;
                    acc.counts[at] = u16::try_from(tf).unwrap_or(u16::MAX);
                }
            })?;
            if bad {
                return Err(Corrupt);
            }
        }
        Ok(acc)
    }

    /// Adds `weight` × row `r`'s term counts to `tf`.
    fn add_counts(&self, r: usize, weight: f64, tf: &mut [f64]) {
        let Some(&slot) = self.slot.get(r) else {
            return;
        };
        if slot == 0 {
            return;
        }
        let at = (slot as usize - 1) * self.terms;
        for (t, &n) in tf.iter_mut().zip(&self.counts[at..at + self.terms]) {
            *t += weight * f64::from(n);
        }
    }

    /// BM25 of row `r`'s context document ([`Spread::Document`]); `tf` is scratch
    /// space of one entry per term.
    #[allow(clippy::too_many_arguments)]
    fn document_score(
        &self,
        postings: &Postings<'_>,
        lists: &[(List<'_>, f64)],
        r: usize,
        around: &[usize],
        weight: f64,
        avg_length: f64,
        tf: &mut Vec<f64>,
    ) -> Result<f64, Corrupt> {
        tf.clear();
        tf.resize(lists.len(), 0.0);
        let mut len = f64::from(*postings.lengths.get(r).ok_or(Corrupt)?);
        self.add_counts(r, 1.0, tf);
        for &n in around {
            len += weight * f64::from(*postings.lengths.get(n).ok_or(Corrupt)?);
            self.add_counts(n, weight, tf);
        }
        #[allow(clippy::cast_precision_loss)]
        let avg = avg_length * (1.0 + weight * around.len() as f64);
        let norm = K1 * (1.0 - B + B * len / avg);
        Ok(lists
            .iter()
            .zip(tf.iter())
            .filter(|(_, &f)| f > 0.0)
            .map(|((_, idf), &f)| idf * f * (K1 + 1.0) / (f + norm))
            .sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts_of(rows: &[&str]) -> (Vec<u8>, Vec<u64>) {
        let mut text = Vec::new();
        let mut offs = vec![0u64];
        for r in rows {
            crate::search::scan::fold(r, &mut text);
            offs.push(text.len() as u64);
        }
        (text, offs)
    }

    #[test]
    fn lists_hold_each_rows_term_frequency_and_stop_words_count_only_in_lengths() {
        let rows = [
            "Serde errors in the tokio runtime",
            "serde serde SERDE",
            "nothing to see here",
            "a b c d tokio",
        ];
        let (text, offsets) = texts_of(&rows);
        let built = build(&Texts {
            text: &text,
            offsets: &offsets,
        })
        .unwrap();
        let p = Postings::of(&built);
        assert_eq!(p.lengths, &[6, 3, 4, 5]);
        assert_eq!(p.total_length, 18);
        let mut serde = Vec::new();
        p.list(&stem("serde"))
            .unwrap()
            .unwrap()
            .for_each(|r, tf| serde.push((r, tf)))
            .unwrap();
        assert_eq!(serde, [(0, 1), (1, 3)]);
        let mut tokio = Vec::new();
        p.list("tokio")
            .unwrap()
            .unwrap()
            .for_each(|r, tf| tokio.push((r, tf)))
            .unwrap();
        assert_eq!(tokio, [(0, 1), (3, 1)]);
        assert!(p.list("the").unwrap().is_none(), "stop word indexed");
        assert!(p.list("b").unwrap().is_none(), "one-letter word indexed");
        let terms: Vec<&[u8]> = (0..p.terms()).map(|i| p.term(i).unwrap()).collect();
        let mut sorted = terms.clone();
        sorted.sort_unstable();
        assert_eq!(terms, sorted, "terms not in bytewise order");
    }

    #[test]
    fn row_terms_are_the_postings_of_each_row() {
        let rows = [
            "Running runs; he ran to run the serde SERDE thing",
            "nothing to see here",
            "",
            "café user_id aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        ];
        let (text, offsets) = texts_of(&rows);
        let built = build(&Texts {
            text: &text,
            offsets: &offsets,
        })
        .unwrap();
        let p = Postings::of(&built);
        let mut from_lists: Vec<Vec<(String, u32)>> = vec![Vec::new(); rows.len()];
        for i in 0..p.terms() {
            let term = std::str::from_utf8(p.term(i).unwrap()).unwrap().to_owned();
            p.list(&term)
                .unwrap()
                .unwrap()
                .for_each(|r, tf| from_lists[r].push((term.clone(), tf)))
                .unwrap();
        }
        let mut cut = RowTerms::default();
        for (r, row) in rows.iter().enumerate() {
            let mut folded = Vec::new();
            crate::search::scan::fold(row, &mut folded);
            let (len, terms) = cut.of(std::str::from_utf8(&folded).unwrap());
            assert_eq!(len, u64::from(p.lengths[r]), "{row}");
            assert_eq!(terms, from_lists[r], "{row}");
        }
    }

    #[test]
    fn words_of_one_stem_share_a_list_and_add_their_counts() {
        let (text, offsets) = texts_of(&["Running runs; he ran to run", "the runner", "RUN"]);
        let built = build(&Texts {
            text: &text,
            offsets: &offsets,
        })
        .unwrap();
        let p = Postings::of(&built);
        assert_eq!(stem("running"), "run");
        let mut run = Vec::new();
        p.list("run")
            .unwrap()
            .unwrap()
            .for_each(|r, tf| run.push((r, tf)))
            .unwrap();
        // `ran` and `runner` are other stems; `running`, `runs`, `run` are one.
        assert_eq!(run, [(0, 3), (2, 1)]);
        assert!(
            p.list("running").unwrap().is_none(),
            "a word posted unstemmed"
        );
        assert!(p.list("ran").unwrap().is_some());
        assert!(p.list("runner").unwrap().is_some());
        // Lengths count every word as written.
        assert_eq!(p.lengths, &[6, 2, 1]);
    }

    #[test]
    fn a_damaged_list_is_corrupt_not_a_panic() {
        let (text, offsets) = texts_of(&["alpha beta", "beta gamma", "beta"]);
        let built = build(&Texts {
            text: &text,
            offsets: &offsets,
        })
        .unwrap();
        for cut in 0..built.lists.len() {
            let mut lists = built.lists.clone();
            lists[cut] ^= 0xff;
            let p = Postings {
                lists: &lists,
                ..Postings::of(&built)
            };
            for term in ["alpha", "beta", "gamma"] {
                // Either decodes to rows inside the segment or says Corrupt.
                if let Ok(Some(list)) = p.list(term) {
                    let _ = list.for_each(|r, _| assert!(r < 3));
                }
            }
        }
    }

    /// Rows 0–3 are one conversation in order, row 4 another.
    fn neighbours_of(row: usize, out: &mut Vec<usize>) {
        if row < 4 {
            out.extend(
                [row.checked_sub(1), Some(row + 1).filter(|&n| n < 4)]
                    .into_iter()
                    .flatten(),
            );
        }
    }

    #[test]
    fn a_row_without_the_words_is_found_through_its_neighbour_and_scores_add_up() {
        let rows = [
            "Where did you go hiking last summer?",
            "Yes, twice, with my sister!",
            "nice weather here",
            "unrelated",
            "hiking boots for sale, summer hiking",
        ];
        let (text, offsets) = texts_of(&rows);
        let built = build(&Texts {
            text: &text,
            offsets: &offsets,
        })
        .unwrap();
        let p = Postings::of(&built);
        let avg = p.total_length as f64 / p.rows() as f64;
        let lists: Vec<(List<'_>, f64)> = ["hiking", "summer"]
            .iter()
            .map(|t| {
                let l = p.list(&stem(t)).unwrap().unwrap();
                (l, idf(5, u64::from(l.df)))
            })
            .collect();
        let plain = top_rows(&p, &lists, avg, 10, |_| true).unwrap();
        let plain_rows: Vec<usize> = plain.iter().map(|x| x.1).collect();
        assert!(
            !plain_rows.contains(&1),
            "row 1 holds no query word: {plain:?}"
        );
        let spread = Spread::Sum { weight: 0.5 };
        let ctx =
            top_rows_in_context(&p, &lists, avg, 10, spread, neighbours_of, |_| true).unwrap();
        let own = |r: usize| plain.iter().find(|x| x.1 == r).map_or(0.0, |x| x.0);
        let got = |r: usize| ctx.iter().find(|c| c.row == r).copied().unwrap();
        // Row 1: nothing of its own, half of row 0's score.
        assert_eq!(got(1).own, 0.0);
        assert!((got(1).score - 0.5 * own(0)).abs() < 1e-12, "{ctx:?}");
        // Row 0: its own plus half of row 1's (0); row 4 has no neighbours.
        assert!((got(0).score - own(0)).abs() < 1e-12);
        assert!((got(4).score - own(4)).abs() < 1e-12);
        // Row 2 is next to row 1 (no words) and row 3 (no words): not ranked.
        assert!(ctx.iter().all(|c| c.row != 2 && c.row != 3), "{ctx:?}");
        // Best first, and `accept` decides what is returned, not what counts.
        assert!(ctx.windows(2).all(|w| w[0].score >= w[1].score));
        let only_1 =
            top_rows_in_context(&p, &lists, avg, 10, spread, neighbours_of, |r| r == 1).unwrap();
        assert_eq!(only_1.len(), 1);
        assert_eq!(only_1[0], got(1));
        // Weight 0 is the row alone.
        let alone = top_rows_in_context(
            &p,
            &lists,
            avg,
            10,
            Spread::Sum { weight: 0.0 },
            neighbours_of,
            |_| true,
        )
        .unwrap();
        let alone: Vec<(f64, usize)> = alone.iter().map(|c| (c.score, c.row)).collect();
        assert_eq!(alone, plain);
        // A document of the row and its neighbours at weight 1 holds both words for row 1.
        let doc = top_rows_in_context(
            &p,
            &lists,
            avg,
            10,
            Spread::Document { weight: 1.0 },
            neighbours_of,
            |_| true,
        )
        .unwrap();
        assert!(doc.iter().any(|c| c.row == 1 && c.score > 0.0), "{doc:?}");
    }
}
