//! 1-bit codes of a set of vectors, scored asymmetrically against a multi-bit query: the
//! small, approximate first pass of a search whose candidates are then re-scored
//! exactly (RaBitQ-style "binary quantization with rescoring").
//!
//! Why: the 8-bit first pass ([`super::quantized`]) reads `dim` bytes per vector (268 MB
//! per query at 1M vectors × 256 dimensions) and is bound by memory bandwidth. One bit
//! per dimension is an eighth of that (32 bytes per vector at 256 dimensions, plus one
//! `f32` factor), and its dot products are a few AND + popcount passes.
//!
//! Shapes. A set shares a centroid `c` (`dim` `f32`, the mean of its vectors). Each
//! vector `v` is kept as the signs of its residual `r = v − c`: bit `d` of the row is 1
//! when `r_d ≥ 0` (`s_d = +1`), else 0 (`s_d = −1`), `words(dim) = ⌈dim / 64⌉` `u64`
//! words per row, bit `d` at bit `d % 64` of word `d / 64`, the padding bits 0; and the
//! factor `f = ‖r‖² / Σ|r_d|` (0 for a zero residual). The estimate of `⟨q, v⟩` is
//!
//! `⟨q, c⟩ + f · Σ_d q_d s_d`
//!
//! (exact when `r` is a multiple of `s`: every `|r_d|` equal). The query is quantized
//! to [`QUERY_BITS`]-bit unsigned codes `u_d` with `q_d ≈ lo + Δ · u_d` and bit-sliced
//! into [`QUERY_BITS`] planes `P_j` (bit `d` of plane `j` is bit `j` of `u_d`), so with
//! `b` the row's bits, `Σ_d q_d s_d ≈ 2 (lo · pop(b) + Δ · Σ_j 2^j pop(b ∧ P_j)) − Σ_d
//! (lo + Δ u_d)`: five popcounts per word.
//!
//! The estimate has no proven bound: the caller keeps the best few hundred by estimate
//! and re-scores them exactly (the conversations store's embeddings, with the
//! oversampling chosen by measurement in docs/performance.md).

/// Bits per query value.
pub const QUERY_BITS: usize = 4;

/// Largest number of `u64` words per row (512 dimensions, as
/// [`super::quantized::MAX_DIM`]).
pub const MAX_WORDS: usize = 8;

/// `u64` words per row of vectors of `dim` values.
pub fn words(dim: usize) -> usize {
    dim.div_ceil(64)
}

/// The mean of vectors, summed in `f64`.
#[derive(Debug, Clone)]
pub struct Centroid {
    sum: Vec<f64>,
    n: u64,
}

impl Centroid {
    /// An empty sum for vectors of `dim` values.
    pub fn new(dim: usize) -> Self {
        Self {
            sum: vec![0.0; dim],
            n: 0,
        }
    }

    /// Adds `v` (values past `dim` are ignored, missing ones count as 0).
    pub fn add(&mut self, v: impl IntoIterator<Item = f32>) {
        for (s, x) in self.sum.iter_mut().zip(v) {
            *s += f64::from(x);
        }
        self.n += 1;
    }

    /// The mean (`dim` values; zeros when nothing was added).
    pub fn mean(&self) -> Vec<f32> {
        #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
        self.sum
            .iter()
            .map(|s| {
                if self.n == 0 {
                    0.0
                } else {
                    (s / self.n as f64) as f32
                }
            })
            .collect()
    }
}

/// Appends the [`words`]`(v.len())` sign words of `v − centroid` to `bits` and returns
/// the factor `f` (see the module docs). `centroid` must have `v.len()` values (missing
/// ones count as 0). A value that is not finite gives a factor of 0 (the vector then
/// estimates as `⟨q, c⟩`).
pub fn encode(v: &[f32], centroid: &[f32], bits: &mut Vec<u64>) -> f32 {
    let start = bits.len();
    bits.resize(start + words(v.len()), 0);
    let (mut sq, mut abs) = (0.0f64, 0.0f64);
    for (d, &x) in v.iter().enumerate() {
        let r = f64::from(x) - f64::from(centroid.get(d).copied().unwrap_or(0.0));
        if r >= 0.0 {
            bits[start + d / 64] |= 1 << (d % 64);
        }
        sq += r * r;
        abs += r.abs();
    }
    #[allow(clippy::cast_possible_truncation)]
    let f = (sq / abs) as f32;
    if abs > 0.0 && f.is_finite() {
        f
    } else {
        0.0
    }
}

/// A query prepared for [`BitView::estimate`]: its bit planes and the constants of the
/// estimate.
#[derive(Debug, Clone)]
pub struct BitQuery {
    words: usize,
    /// [`QUERY_BITS`] planes of `words` words each, plane `j` at `j · words`.
    planes: Vec<u64>,
    lo: f32,
    delta: f32,
    /// `Σ_d (lo + Δ u_d)`.
    sum: f32,
    /// `⟨q, c⟩`.
    base: f32,
}

/// Sign words, factors and centroid of consecutive vectors, borrowed (from a
/// memory-mapped file). `bits` holds [`words`]`(dim)` words per slot, `factor` one
/// value per slot, `centroid` `dim` values.
#[derive(Debug, Clone, Copy)]
pub struct BitView<'a> {
    /// Values per vector (1..=512).
    pub dim: usize,
    /// Sign words, slot after slot.
    pub bits: &'a [u64],
    /// Per slot: `‖r‖² / Σ|r_d|`.
    pub factor: &'a [f32],
    /// The centroid the residuals are taken from.
    pub centroid: &'a [f32],
}

impl BitView<'_> {
    /// Number of slots (the shorter of `bits` and `factor`, in slots; 0 for a
    /// dimension outside 1..=512).
    pub fn len(&self) -> usize {
        let w = words(self.dim);
        if w == 0 || w > MAX_WORDS {
            return 0;
        }
        (self.bits.len() / w).min(self.factor.len())
    }

    /// True when no slot is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The query `q` (length `dim`) prepared; `None` when its length differs from
    /// `dim`, the centroid's does, or a value is not finite.
    pub fn query(&self, q: &[f32]) -> Option<BitQuery> {
        let w = words(self.dim);
        if q.len() != self.dim
            || self.centroid.len() != self.dim
            || w == 0
            || w > MAX_WORDS
            || q.iter().any(|x| !x.is_finite())
        {
            return None;
        }
        let lo = q.iter().copied().fold(f32::INFINITY, f32::min);
        let hi = q.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let levels = ((1u32 << QUERY_BITS) - 1) as f32;
        let delta = (hi - lo) / levels;
        let mut planes = vec![0u64; QUERY_BITS * w];
        let mut sum = 0.0f64;
        for (d, &x) in q.iter().enumerate() {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let u = if delta > 0.0 {
                ((x - lo) / delta).round().clamp(0.0, levels) as u32
            } else {
                0
            };
            for j in 0..QUERY_BITS {
                if u & (1 << j) != 0 {
                    planes[j * w + d / 64] |= 1 << (d % 64);
                }
            }
            sum += f64::from(lo) + f64::from(delta) * f64::from(u);
        }
        let base: f32 = q.iter().zip(self.centroid).map(|(a, b)| a * b).sum();
        #[allow(clippy::cast_possible_truncation)]
        Some(BitQuery {
            words: w,
            planes,
            lo,
            delta,
            sum: sum as f32,
            base,
        })
    }

    /// The estimate of `⟨q, v⟩` for slot `slot` (see the module docs); 0 past the end.
    pub fn estimate(&self, q: &BitQuery, slot: usize) -> f32 {
        let w = q.words;
        let (Some(row), Some(&f)) = (
            self.bits.get(slot * w..(slot + 1) * w),
            self.factor.get(slot),
        ) else {
            return 0.0;
        };
        let (mut pb, mut s) = (0u32, 0u32);
        for (i, &b) in row.iter().enumerate() {
            pb += b.count_ones();
            for j in 0..QUERY_BITS {
                s += (b & q.planes[j * w + i]).count_ones() << j;
            }
        }
        combine(q, f, pb, s)
    }

    /// The slots of (at most) the `c` largest estimates among those `keep(slot)`
    /// accepts, with their estimates, in no particular order. `keep` is called once
    /// per slot, in slot order.
    ///
    /// On x86-64 CPUs with AVX-512 VPOPCNTDQ (vector popcounts, ~1.7× faster here), or
    /// else AVX2 and POPCNT, the same (safe, integer) code runs compiled for them,
    /// chosen at run time; results are identical.
    pub fn top(&self, q: &BitQuery, c: usize, keep: impl FnMut(usize) -> bool) -> Vec<(u32, f32)> {
        if c == 0 || q.words != words(self.dim) {
            return Vec::new();
        }
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx512vpopcntdq")
            && std::arch::is_x86_feature_detected!("avx512vl")
            && std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("popcnt")
        {
            // SAFETY: `top_avx512` only requires these features, which this CPU has
            // (checked just above).
            return unsafe { self.top_avx512(q, c, keep) };
        }
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("popcnt")
        {
            // SAFETY: `top_fast` only requires AVX2 and POPCNT, which this CPU has
            // (checked just above).
            return unsafe { self.top_fast(q, c, keep) };
        }
        self.top_dispatch(q, c, keep)
    }

    /// [`BitView::top`] compiled with AVX-512 (F, VL, VPOPCNTDQ), AVX2 and POPCNT
    /// enabled.
    ///
    /// # Safety
    /// The CPU must support those features.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,popcnt,avx512f,avx512vl,avx512vpopcntdq")]
    unsafe fn top_avx512(
        &self,
        q: &BitQuery,
        c: usize,
        keep: impl FnMut(usize) -> bool,
    ) -> Vec<(u32, f32)> {
        self.top_dispatch(q, c, keep)
    }

    /// [`BitView::top`] compiled with AVX2 and POPCNT enabled.
    ///
    /// # Safety
    /// The CPU must support AVX2 and POPCNT.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,popcnt")]
    unsafe fn top_fast(
        &self,
        q: &BitQuery,
        c: usize,
        keep: impl FnMut(usize) -> bool,
    ) -> Vec<(u32, f32)> {
        self.top_dispatch(q, c, keep)
    }

    #[inline(always)]
    fn top_dispatch(
        &self,
        q: &BitQuery,
        c: usize,
        keep: impl FnMut(usize) -> bool,
    ) -> Vec<(u32, f32)> {
        match q.words {
            1 => self.top_body::<1>(q, c, keep),
            2 => self.top_body::<2>(q, c, keep),
            3 => self.top_body::<3>(q, c, keep),
            4 => self.top_body::<4>(q, c, keep),
            5 => self.top_body::<5>(q, c, keep),
            6 => self.top_body::<6>(q, c, keep),
            7 => self.top_body::<7>(q, c, keep),
            8 => self.top_body::<8>(q, c, keep),
            _ => Vec::new(),
        }
    }

    #[inline(always)]
    fn top_body<const W: usize>(
        &self,
        q: &BitQuery,
        c: usize,
        mut keep: impl FnMut(usize) -> bool,
    ) -> Vec<(u32, f32)> {
        let mut planes = [[0u64; W]; QUERY_BITS];
        for (j, plane) in planes.iter_mut().enumerate() {
            plane.copy_from_slice(&q.planes[j * W..(j + 1) * W]);
        }
        // `buf`: the largest estimates so far, cut back to the `c` largest when it
        // doubles, so `tau`, their c-th largest, only grows.
        let mut buf: Vec<(u32, f32)> = Vec::with_capacity(2 * c);
        let mut tau = f32::NEG_INFINITY;
        let rows = self.bits.chunks_exact(W).zip(self.factor);
        for (slot, (row, &f)) in rows.enumerate() {
            if !keep(slot) {
                continue;
            }
            let (mut pb, mut s) = (0u32, 0u32);
            for i in 0..W {
                let b = row[i];
                pb += b.count_ones();
                for (j, plane) in planes.iter().enumerate() {
                    s += (b & plane[i]).count_ones() << j;
                }
            }
            let est = combine(q, f, pb, s);
            if est > tau {
                buf.push((u32::try_from(slot).unwrap_or(u32::MAX), est));
                if buf.len() == 2 * c {
                    buf.select_nth_unstable_by(c - 1, |a, b| b.1.total_cmp(&a.1));
                    buf.truncate(c);
                    tau = buf[c - 1].1;
                }
            }
        }
        if buf.len() > c {
            buf.select_nth_unstable_by(c - 1, |a, b| b.1.total_cmp(&a.1));
            buf.truncate(c);
        }
        buf
    }
}

/// The estimate from a row's popcounts: `pb = pop(b)`, `s = Σ_j 2^j pop(b ∧ P_j)`.
#[inline(always)]
#[allow(clippy::cast_precision_loss)] // pb, s < 2^13
fn combine(q: &BitQuery, f: f32, pb: u32, s: u32) -> f32 {
    let ones = q.lo * pb as f32 + q.delta * s as f32;
    q.base + f * (2.0 * ones - q.sum)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vector(seed: u64, dim: usize) -> Vec<f32> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let v: Vec<f32> = (0..dim)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                #[allow(clippy::cast_precision_loss)]
                let r = (x >> 11) as f32 / (1u64 << 53) as f32;
                r - 0.3
            })
            .collect();
        crate::search::vectors::normalized(&v)
    }

    /// The estimate computed the plain way: the query's quantized values times ±1,
    /// dimension by dimension.
    fn reference(view: &BitView<'_>, q: &BitQuery, slot: usize) -> f32 {
        let w = words(view.dim);
        let row = &view.bits[slot * w..(slot + 1) * w];
        let mut acc = 0.0f64;
        for d in 0..view.dim {
            let mut u = 0u32;
            for j in 0..QUERY_BITS {
                u |= u32::from(q.planes[j * w + d / 64] >> (d % 64) & 1 == 1) << j;
            }
            let qd = f64::from(q.lo) + f64::from(q.delta) * f64::from(u);
            let sign = if row[d / 64] >> (d % 64) & 1 == 1 {
                1.0
            } else {
                -1.0
            };
            acc += qd * sign;
        }
        #[allow(clippy::cast_possible_truncation)]
        let est = f64::from(q.base) + f64::from(view.factor[slot]) * acc;
        est as f32
    }

    #[test]
    fn bit_sliced_estimates_match_the_plain_loop_and_track_the_dot() {
        for dim in [256usize, 100, 64, 7, 512] {
            let rows: Vec<Vec<f32>> = (0..300).map(|i| vector(i, dim)).collect();
            let mut cen = Centroid::new(dim);
            for v in &rows {
                cen.add(v.iter().copied());
            }
            let centroid = cen.mean();
            let mut bits = Vec::new();
            let factor: Vec<f32> = rows
                .iter()
                .map(|v| encode(v, &centroid, &mut bits))
                .collect();
            assert_eq!(bits.len(), rows.len() * words(dim));
            // Padding bits stay 0 and bit d is the sign of the residual.
            for (u, v) in rows.iter().enumerate() {
                for d in 0..words(dim) * 64 {
                    let bit = bits[u * words(dim) + d / 64] >> (d % 64) & 1 == 1;
                    let want = d < dim && v[d] - centroid[d] >= 0.0;
                    assert_eq!(bit, want, "dim {dim} unit {u} bit {d}");
                }
            }
            let view = BitView {
                dim,
                bits: &bits,
                factor: &factor,
                centroid: &centroid,
            };
            assert_eq!(view.len(), rows.len());
            let mut err = 0.0f64;
            for qi in 0..10 {
                let q = vector(1000 + qi, dim);
                let bq = view.query(&q).unwrap();
                for (slot, v) in rows.iter().enumerate() {
                    let fast = view.estimate(&bq, slot);
                    let slow = reference(&view, &bq, slot);
                    assert!((fast - slow).abs() <= 1e-4, "dim {dim}: {fast} vs {slow}");
                    let exact = crate::search::vectors::cosine(&q, v);
                    err += f64::from((fast - exact).abs());
                }
                // `top` keeps the c largest estimates of the kept slots.
                let keep = |s: usize| s % 4 != 1;
                let mut got: Vec<u32> = view.top(&bq, 20, keep).iter().map(|x| x.0).collect();
                got.sort_unstable();
                let mut all: Vec<(u32, f32)> = (0..rows.len())
                    .filter(|&s| keep(s))
                    .map(|s| (s as u32, view.estimate(&bq, s)))
                    .collect();
                all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                let cut = all[19].1;
                assert!(got.len() == 20);
                for s in &got {
                    assert!(keep(*s as usize) && view.estimate(&bq, *s as usize) >= cut);
                }
            }
            // The estimate tracks the dot product (mean error well below its spread).
            let mean = err / (10.0 * rows.len() as f64);
            if dim >= 64 {
                assert!(mean < 0.08, "dim {dim}: mean estimate error {mean}");
            }
        }
    }

    #[test]
    fn degenerate_inputs_do_not_panic() {
        let dim = 16;
        let centroid = vec![0.0f32; dim];
        let mut bits = Vec::new();
        assert_eq!(encode(&vec![0.0; dim], &centroid, &mut bits), 0.0);
        assert_eq!(encode(&[f32::NAN; 16], &centroid, &mut bits), 0.0);
        let factor = [0.0f32, 0.0];
        let view = BitView {
            dim,
            bits: &bits,
            factor: &factor,
            centroid: &centroid,
        };
        assert!(view.query(&[1.0; 3]).is_none());
        assert!(view.query(&[f32::INFINITY; 16]).is_none());
        let q = view.query(&[0.5; 16]).unwrap();
        assert_eq!(view.top(&q, 0, |_| true), Vec::new());
        assert_eq!(view.top(&q, 5, |_| true).len(), 2);
        assert_eq!(view.estimate(&q, 9), 0.0);
        let short = BitView {
            dim,
            bits: &bits[..1],
            factor: &factor,
            centroid: &centroid,
        };
        assert_eq!(short.len(), 1);
        assert_eq!(short.top(&q, 5, |_| true).len(), 1);
    }

    /// Time per row of `top` (run: `cargo test --release --lib time_the_one_bit_scan --
    /// --ignored --nocapture`).
    #[test]
    #[ignore = "a timing, not a check"]
    fn time_the_one_bit_scan() {
        let (dim, rows) = (256, 1_000_000);
        let mut x = 0x1234_5678_9ABC_DEF1u64;
        let bits: Vec<u64> = (0..rows * words(dim))
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            })
            .collect();
        let factor = vec![0.05f32; rows];
        let centroid = vec![0.0f32; dim];
        let view = BitView {
            dim,
            bits: &bits,
            factor: &factor,
            centroid: &centroid,
        };
        let q = view.query(&vector(3, dim)).unwrap();
        for _ in 0..5 {
            let t = std::time::Instant::now();
            let top = view.top(&q, 1000, |_| true);
            let el = t.elapsed();
            println!(
                "1-bit scan: {:.2} ns per row ({} kept)",
                el.as_secs_f64() * 1e9 / rows as f64,
                top.len()
            );
        }
    }
}
