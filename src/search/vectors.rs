//! Embedding vectors held for search: one contiguous matrix of unit vectors, their
//! exact dot products with a query, and the n largest of them found through the 8-bit
//! copy ([`super::quantized`]) without computing every exact one.
//!
//! Rows are numbered by the caller (an index into its own row list); the matrix only
//! stores which row each of its slots holds.

use super::quantized::{Quantized, View};

/// Rows per block of the vector matrix: a block holds its rows' vectors dimension by
/// dimension, so one pass over a block computes this many dot products side by side.
pub const LANES: usize = 16;

/// Cosine similarity of two unit vectors (their dot product), in [-1, 1]; vectors of
/// different length give 0.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() {
        return 0.0;
    }
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// `v` scaled to unit L2 norm (a zero vector stays zero).
pub fn normalized(v: &[f32]) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 && norm.is_finite() {
        v.iter().map(|x| x / norm).collect()
    } else {
        vec![0.0; v.len()]
    }
}

/// The vectors of one model, laid out for scoring.
///
/// Vectors of the common dimension (that of the first one pushed) sit in one
/// contiguous matrix of blocks of [`LANES`] slots, stored dimension-major inside a
/// block; a dot product is accumulated in the same order as [`cosine`], so scores are
/// identical. An 8-bit copy of the matrix ([`Quantized`]) serves the first pass of
/// [`VectorMatrix::for_each_top_row_dot`]. Vectors of another length are kept apart and
/// scored with [`cosine`].
///
/// Size: 4 bytes per dimension per vector, plus ~1 byte per dimension for the copy.
#[derive(Debug, Default)]
pub struct VectorMatrix {
    dim: usize,
    /// Row of each matrix slot.
    slots: Vec<u32>,
    matrix: Vec<f32>,
    /// Vectors whose length differs from `dim`: `(row, vector)`.
    odd: Vec<(u32, Vec<f32>)>,
    /// 8-bit copy of `matrix`, slot by slot, for the first pass of
    /// [`VectorMatrix::for_each_top_row_dot`]; `None` when a vector cannot be bounded.
    quantized: Option<Quantized>,
}

/// Builds a [`VectorMatrix`] one vector at a time ([`VectorMatrix::push`]), then
/// returns its spare capacity.
#[derive(Debug, Default)]
pub struct VectorMatrixBuilder {
    matrix: VectorMatrix,
}

impl VectorMatrixBuilder {
    /// Adds `row`'s vector ([`VectorMatrix::push`]).
    pub fn push(&mut self, row: u32, vector: &[f32]) {
        self.matrix.push(row, vector);
    }

    /// The finished matrix.
    pub fn finish(mut self) -> VectorMatrix {
        if let Some(q) = self.matrix.quantized.as_mut() {
            q.shrink_to_fit();
        }
        self.matrix
    }
}

impl VectorMatrix {
    /// Adds `row`'s vector. The first vector sets the matrix dimension; a vector of
    /// another length (or any vector when that dimension is 0) is kept apart. A vector
    /// the 8-bit copy cannot bound drops the copy: searches then compute every exact
    /// dot product.
    pub fn push(&mut self, row: u32, vector: &[f32]) {
        let len = vector.len();
        if self.slots.is_empty() && self.odd.is_empty() {
            self.dim = len;
            self.quantized = Quantized::new(len);
        }
        let d = self.dim;
        if len == d && d > 0 {
            let (b, lane) = (self.slots.len() / LANES, self.slots.len() % LANES);
            if lane == 0 {
                self.matrix.resize((b + 1) * d * LANES, 0.0);
            }
            let base = b * d * LANES;
            for (k, &x) in vector.iter().enumerate() {
                self.matrix[base + k * LANES + lane] = x;
            }
            if self.quantized.as_mut().is_some_and(|c| !c.push(vector)) {
                self.quantized = None;
            }
            self.slots.push(row);
        } else {
            self.odd.push((row, vector.to_vec()));
        }
    }

    /// Number of vectors held.
    pub fn len(&self) -> usize {
        self.slots.len() + self.odd.len()
    }

    /// True when no vector is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Calls `f(row, dot)` for the vectors (of rows passing `keep`) needed to rank the
    /// `n` rows with the largest dot product with `q`, a row holding several vectors
    /// scoring by its best one: the best vector of each of the `n` best rows is among
    /// them, and a row left out (or given only some of its vectors) is strictly below
    /// at least `n` rows whose best is given, the n-th of which lies in (0, 1], so the
    /// order of dot products clamped to [0, 1] (cosines) keeps it out as well. Dot
    /// products are exact (as in [`VectorMatrix::for_each_dot`]). `rows` bounds the
    /// row numbers. Returns how many vectors pass `keep`.
    ///
    /// How ([`top_group_dots`]): a first pass over the 8-bit copy of the matrix (a
    /// quarter of its bytes; [`super::quantized`]) gives each vector an interval
    /// holding its dot product; vectors whose interval reaches the n-th best row's
    /// lower end are then computed exactly, highest upper end first, until the next
    /// upper end is below the n-th best row so far. Falls back to the whole exact pass
    /// when there is no 8-bit copy, the query is zero, or that bound cannot be proven.
    pub fn for_each_top_row_dot(
        &self,
        q: &[f32],
        n: usize,
        rows: usize,
        keep: impl Fn(usize) -> bool,
        mut f: impl FnMut(usize, f32),
    ) -> usize {
        let pruned = self.quantized.as_ref().and_then(|quant| {
            top_group_dots(
                &quant.view(),
                q,
                n,
                rows,
                |slot| self.slots[slot] as usize,
                |slot| keep(self.slots[slot] as usize),
                |slot| self.exact_dot(q, slot),
            )
        });
        let Some((mut kept, exact)) = pruned else {
            let mut kept = 0;
            self.for_each_dot(q, &keep, |i, d| {
                kept += 1;
                f(i, d);
            });
            return kept;
        };
        for (slot, dot) in exact {
            f(self.slots[slot] as usize, dot);
        }
        for (r, v) in &self.odd {
            if keep(*r as usize) {
                kept += 1;
                f(*r as usize, cosine(q, v));
            }
        }
        kept
    }

    /// Slot `slot`'s dot product with `q` (of length `dim`), summed exactly as one lane
    /// of [`VectorMatrix::for_each_dot`].
    fn exact_dot(&self, q: &[f32], slot: usize) -> f32 {
        let (block, lane) = (slot / LANES, slot % LANES);
        let column = &self.matrix[block * self.dim * LANES + lane..];
        let mut acc = -0.0f32;
        for (d, qd) in q.iter().enumerate() {
            acc += qd * column[d * LANES];
        }
        acc
    }

    /// Calls `f(row index, dot product)` for every embedded row whose row index
    /// passes `keep`. The dot product equals [`cosine`] of
    /// `q` and the stored vector, bit for bit.
    pub fn for_each_dot(
        &self,
        q: &[f32],
        keep: impl Fn(usize) -> bool,
        mut f: impl FnMut(usize, f32),
    ) {
        let dim = self.dim;
        if dim > 0 {
            for (b, block) in self.matrix.chunks_exact(dim * LANES).enumerate() {
                let first = b * LANES;
                let lanes = (self.slots.len() - first).min(LANES);
                let rows = &self.slots[first..first + lanes];
                if !rows.iter().any(|&r| keep(r as usize)) {
                    continue;
                }
                if q.len() == dim {
                    // -0.0 is the start of `Iterator::sum` for floats.
                    let mut acc = [-0.0f32; LANES];
                    for (qd, col) in q.iter().zip(block.chunks_exact(LANES)) {
                        for l in 0..LANES {
                            acc[l] += qd * col[l];
                        }
                    }
                    for (l, &r) in rows.iter().enumerate() {
                        if keep(r as usize) {
                            f(r as usize, acc[l]);
                        }
                    }
                } else {
                    for &r in rows {
                        if keep(r as usize) {
                            f(r as usize, 0.0);
                        }
                    }
                }
            }
        }
        for (r, v) in &self.odd {
            if keep(*r as usize) {
                f(*r as usize, cosine(q, v));
            }
        }
    }
}

/// The exact dot products that can be among the `n` largest, found through an 8-bit
/// copy: `(slots kept, (slot, exact dot) of every slot that can be in the top n)`, or
/// `None` when pruning cannot be proven (zero query, no `n`, the n-th best exact value
/// outside (0, 1]; the caller then computes every exact value). `keep(slot)` is the
/// row mask; `exact(slot)` the exact dot product the bounds of `quant` hold (see
/// [`top_group_dots`], the same method with one slot per group).
pub fn top_dots(
    quant: &View<'_>,
    q: &[f32],
    n: usize,
    keep: impl Fn(usize) -> bool,
    exact: impl Fn(usize) -> f32,
) -> Option<(usize, Vec<(usize, f32)>)> {
    let query = quant.query(q)?;
    if n == 0 {
        return None;
    }
    // `lows`: the largest lower ends so far, cut back to the n largest when it
    // doubles, so `theta`, their n-th largest, only grows. `candidates`: (upper
    // end, slot) of the slots whose upper end reached `theta` when seen.
    let mut lows: Vec<f64> = Vec::with_capacity(2 * n);
    let mut theta = f64::NEG_INFINITY;
    let mut candidates: Vec<(f64, u32)> = Vec::new();
    let mut kept = 0;
    quant.scan(&query, keep, |slot, low, high| {
        kept += 1;
        if high >= theta {
            candidates.push((high, u32::try_from(slot).unwrap_or(u32::MAX)));
        }
        if low > theta {
            lows.push(low);
            if lows.len() == 2 * n {
                theta = nth_largest(&mut lows, n);
            }
        }
    });
    // The n-th largest lower end of all: every slot whose upper end is below it
    // has n slots surely above it.
    let theta = if lows.len() >= n {
        nth_largest(&mut lows, n)
    } else {
        f64::NEG_INFINITY
    };
    candidates.retain(|c| c.0 >= theta);
    candidates.sort_unstable_by(|a, b| b.0.total_cmp(&a.0));
    let complete = candidates.len() == kept;
    // Exact values, highest upper end first; `best` holds the n largest so far.
    let mut best: std::collections::BinaryHeap<std::cmp::Reverse<i64>> =
        std::collections::BinaryHeap::with_capacity(n + 1);
    let mut found = Vec::new();
    let mut stopped = false;
    for (high, slot) in candidates {
        if best.len() == n {
            let nth = best.peek().map_or(f64::NAN, |k| from_total_key(k.0));
            if high < nth && nth > 0.0 && nth <= 1.0 {
                stopped = true;
                break;
            }
        }
        let slot = slot as usize;
        let dot = exact(slot);
        found.push((slot, dot));
        best.push(std::cmp::Reverse(total_key(f64::from(dot))));
        if best.len() > n {
            best.pop();
        }
    }
    if !stopped && !complete {
        // Every candidate was computed; the slots below `theta` stay out only if
        // the n-th best exact value (≥ theta) is in (0, 1].
        let nth = if best.len() == n {
            best.peek().map_or(f64::NAN, |k| from_total_key(k.0))
        } else {
            f64::NAN
        };
        if !(nth > 0.0 && nth <= 1.0) {
            return None;
        }
    }
    Some((kept, found))
}

/// [`top_dots`] for slots that belong to groups (a memory's chunk vectors), a group
/// scoring by its best slot: `(slots kept, (slot, exact dot) of every slot computed)`,
/// where the computed slots include the best slot of every group among the `n` best
/// groups, and a group left out (none of its slots computed, or only some) is below
/// at least `n` groups whose best is computed. `group(slot)` is the slot's group, in
/// `0..groups`. `None` when pruning cannot be proven (as for [`top_dots`]).
///
/// How: the 8-bit pass gives every kept slot an interval; `theta` is the n-th largest
/// of the groups' best lower ends (n groups surely reach it), so a slot whose upper
/// end is below `theta` cannot be any group's best among the top n. The rest are
/// computed exactly, highest upper end first, until the next upper end is below the
/// n-th best group found so far: that slot can neither raise a top group nor bring a
/// new one in. Counting groups rather than slots is what keeps the pass small when
/// some groups hold many slots (with [`top_dots`] over `n + extra slots` instead, a
/// store with 28k second chunks computed ~28k dots per query).
pub fn top_group_dots(
    quant: &View<'_>,
    q: &[f32],
    n: usize,
    groups: usize,
    group: impl Fn(usize) -> usize,
    keep: impl Fn(usize) -> bool,
    exact: impl Fn(usize) -> f32,
) -> Option<(usize, Vec<(usize, f32)>)> {
    let query = quant.query(q)?;
    if n == 0 {
        return None;
    }
    let mut best_low = vec![f64::NEG_INFINITY; groups];
    let mut bounds: Vec<(f64, u32)> = Vec::new();
    let mut kept = 0;
    let mut out_of_range = false;
    quant.scan(&query, keep, |slot, low, high| {
        kept += 1;
        match best_low.get_mut(group(slot)) {
            Some(b) if low > *b => *b = low,
            Some(_) => {}
            None => out_of_range = true,
        }
        bounds.push((high, u32::try_from(slot).unwrap_or(u32::MAX)));
    });
    if out_of_range {
        return None;
    }
    let mut lows: Vec<f64> = best_low.into_iter().filter(|l| l.is_finite()).collect();
    let theta = if lows.len() >= n {
        nth_largest(&mut lows, n)
    } else {
        f64::NEG_INFINITY
    };
    bounds.retain(|c| c.0 >= theta);
    bounds.sort_unstable_by(|a, b| b.0.total_cmp(&a.0));
    let complete = bounds.len() == kept;
    // `top`: the n best groups so far as (value key, group); a group's value only
    // grows, so a group pushed out never needs to come back by an old value.
    let mut value: std::collections::HashMap<usize, i64> = std::collections::HashMap::new();
    let mut top: std::collections::BTreeSet<(i64, usize)> = std::collections::BTreeSet::new();
    let nth = |top: &std::collections::BTreeSet<(i64, usize)>| {
        (top.len() == n)
            .then(|| top.first().map(|k| from_total_key(k.0)))
            .flatten()
    };
    let mut found = Vec::new();
    let mut stopped = false;
    for (high, slot) in bounds {
        if let Some(nth) = nth(&top) {
            if high < nth && nth > 0.0 && nth <= 1.0 {
                stopped = true;
                break;
            }
        }
        let slot = slot as usize;
        let dot = exact(slot);
        found.push((slot, dot));
        let g = group(slot);
        let key = total_key(f64::from(dot));
        let old = value.get(&g).copied();
        if old.is_some_and(|o| o >= key) {
            continue;
        }
        let was_top = old.is_some_and(|o| top.remove(&(o, g)));
        if was_top || top.len() < n || top.first().is_some_and(|f| key > f.0) {
            top.insert((key, g));
        }
        value.insert(g, key);
        if top.len() > n {
            top.pop_first();
        }
    }
    if !stopped && !complete && !nth(&top).is_some_and(|nth| nth > 0.0 && nth <= 1.0) {
        return None;
    }
    Some((kept, found))
}

/// An `i64` ordered as `f64::total_cmp` orders `x`.
fn total_key(x: f64) -> i64 {
    #[allow(clippy::cast_possible_wrap)]
    let bits = x.to_bits() as i64;
    bits ^ ((bits >> 63) as u64 >> 1) as i64
}

/// The inverse of [`total_key`].
fn from_total_key(k: i64) -> f64 {
    #[allow(clippy::cast_sign_loss)]
    f64::from_bits((k ^ ((k >> 63) as u64 >> 1) as i64) as u64)
}

/// The `n`-th largest of `v` (1-based; `v.len() ≥ n ≥ 1`), keeping only the `n`
/// largest in `v`.
fn nth_largest(v: &mut Vec<f64>, n: usize) -> f64 {
    v.select_nth_unstable_by(n - 1, |a, b| b.total_cmp(a));
    v.truncate(n);
    v[n - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cosine_of_unit_vectors() {
        assert!((cosine(&[1.0, 0.0], &[1.0, 0.0]) - 1.0).abs() < 1e-6);
        assert_eq!(cosine(&[1.0], &[1.0, 0.0]), 0.0);
    }

    #[test]
    fn normalized_is_unit_or_zero() {
        let v = normalized(&[3.0, 4.0]);
        assert!((v[0] - 0.6).abs() < 1e-6 && (v[1] - 0.8).abs() < 1e-6);
        assert_eq!(normalized(&[0.0, 0.0]), vec![0.0, 0.0]);
        assert_eq!(normalized(&[f32::NAN, 1.0]), vec![0.0, 0.0]);
    }
}
