//! Semantic search over the opened [`Embeddings`]: the filters, the first passes
//! (exact 8-bit, or 1-bit with exact re-scoring) and the stored vectors for tests.

use std::collections::{HashMap, HashSet};
#[cfg(test)]
use std::path::Path;

use super::format::{exact_dot, Segment};
use super::{Embeddings, UnitMessage, BITS_MIN_UNITS, CANDIDATES_FLOOR, OVERSAMPLE};
use crate::cancel::Cancel;
use crate::search::bits::{self, BitView};
use crate::search::quantized::{self, View};
use crate::search::scan::Corrupt;
use crate::search::vectors;
use crate::stores::conversations::project::Scope;
#[cfg(test)]
use crate::stores::segments::Unavailable;

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
    /// Some message of the project scope (`project` argument).
    pub project: Option<&'a Scope>,
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

impl Embeddings {
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
        if n == 0 || q.len() != self.manifest().dim as usize {
            return Ok(Vec::new());
        }
        let candidates = match pass {
            FirstPass::Bits { min_units, .. } if self.manifest().units >= min_units => {
                pass.candidates(n)
            }
            _ => None,
        };
        // (score, segment, unit)
        let mut best: Vec<(f32, usize, usize)> = Vec::new();
        for (si, live) in self.segments().iter().enumerate() {
            let seg = &live.seg;
            let keep_conv = conversation_mask(seg, filter)?;
            // Conversations only some of whose messages are in the project scope: a
            // unit is kept when one of its messages is.
            let partly = partly_in_scope(seg, filter)?;
            let view = seg.view()?;
            let conv: &[u32] = seg.cast(4)?;
            let roles = seg.bytes(6);
            let (first, last): (&[i64], &[i64]) = (seg.cast(7)?, seg.cast(8)?);
            if stop.is_stopped() {
                break;
            }
            let keep = |u: usize| {
                !stop.is_stopped()
                    && !live.is_dead(u)
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
                    && conv.get(u).is_some_and(|c| match partly.get(c) {
                        None => true,
                        Some(ids) => seg
                            .unit_messages(u)
                            .is_ok_and(|ms| ms.iter().any(|m| ids.contains(m.message_id.as_str()))),
                    })
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
                let seg = &self.segments()[si].seg;
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
    if filter.source.is_none() && filter.conversation_id.is_none() && filter.project.is_none() {
        return Ok(None);
    }
    let mut keep = HashSet::new();
    for c in 0..seg.conversations() {
        let (s, id) = seg.conversation(c)?;
        if filter.source.is_none_or(|f| f == s)
            && filter.conversation_id.is_none_or(|f| f == id)
            && filter.project.is_none_or(|p| p.keeps_conversation(s, id))
        {
            keep.insert(u32::try_from(c).unwrap_or(u32::MAX));
        }
    }
    Ok(Some(keep))
}

/// The conversation numbers of `seg` only some of whose messages are in the
/// filter's project scope, with the ids of those messages.
fn partly_in_scope<'s>(
    seg: &Segment,
    filter: &Filter<'s>,
) -> Result<HashMap<u32, &'s HashSet<String>>, Corrupt> {
    let mut out = HashMap::new();
    let Some(scope) = filter.project else {
        return Ok(out);
    };
    for c in 0..seg.conversations() {
        let (s, id) = seg.conversation(c)?;
        if let Some(Some(ids)) = scope.messages(s, id) {
            out.insert(u32::try_from(c).unwrap_or(u32::MAX), ids);
        }
    }
    Ok(out)
}

/// The top `n` (unit, exact score) of one segment among the units `keep` accepts, on
/// up to `threads` slices of the segment at once. Without `fast`: the 8-bit pruned
/// pass (each slice exact on its own, so their merge is), or every exact value when
/// pruning cannot be proven. With `fast = (bit view, c)`: the `c` best units of each
/// slice by the 1-bit estimate, re-scored exactly (every exact value when the query
/// cannot be prepared).
pub(super) fn top_in(
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

/// One stored unit as [`stored_vectors`] returns it: `(source, conversation_id, first
/// message id, v̂)`.
#[cfg(test)]
pub type StoredVector = (String, String, String, Vec<f32>);

/// The stored vector of every live unit, for tests, in file order.
///
/// # Errors
/// [`Unavailable`] as [`Embeddings::open`].
#[cfg(test)]
pub fn stored_vectors(db: &Path) -> Result<Vec<StoredVector>, Unavailable> {
    let e = Embeddings::open(db)?;
    let bad = |_| Unavailable::Corrupt("damaged segment".into());
    let mut out = Vec::new();
    for live in e.segments() {
        let seg = &live.seg;
        let conv: &[u32] = seg.cast(4).map_err(bad)?;
        for (u, &c) in conv.iter().enumerate().take(seg.units) {
            if live.is_dead(u) {
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

/// Where one live unit is: its segment and its row there ([`Embeddings::units_by_conversation`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnitRef {
    segment: u32,
    unit: u32,
}

/// The live units of one conversation, in order, and a fingerprint of them.
#[derive(Debug, Clone, Default)]
pub struct ConversationUnits {
    /// The units, in conversation order (a conversation's units are in one segment).
    pub units: Vec<UnitRef>,
    /// A hash of every unit's 8-bit code, scale and messages, in order (never 0 for a
    /// conversation with units; non-negative): what a push compares to see that a
    /// conversation's vectors changed.
    pub print: i64,
}

/// One stored unit, as the team archive receives it: its messages, its 8-bit code
/// (`scale`, `codes`: the stored vector is `v̂ = scale · codes`, the vector
/// [`Embeddings::search`] scores) and its role bits and time range.
#[derive(Debug, Clone, PartialEq)]
pub struct UnitRecord {
    /// The window's messages, in conversation order.
    pub messages: Vec<UnitMessage>,
    /// The role bits of its messages ([`super::role`]).
    pub roles: u8,
    /// Its first and last message's `created`, µs.
    pub first_us: i64,
    /// See `first_us`.
    pub last_us: i64,
    /// The code's scale.
    pub scale: f32,
    /// The `dim` codes.
    pub codes: Vec<i8>,
}

impl Embeddings {
    /// Every live unit grouped by (`source`, `conversation_id`), each conversation's
    /// units in order with their fingerprint.
    ///
    /// # Errors
    /// [`Corrupt`] when a segment is damaged.
    pub fn units_by_conversation(
        &self,
    ) -> Result<HashMap<(String, String), ConversationUnits>, Corrupt> {
        use sha2::{Digest, Sha256};
        let mut out: HashMap<(String, String), ConversationUnits> = HashMap::new();
        // One hasher per conversation (SHA-256: the same across builds, so a new
        // toolchain does not make every push send all vectors again), fed unit by unit.
        let mut hashers: HashMap<(String, String), Sha256> = HashMap::new();
        for (si, live) in self.segments().iter().enumerate() {
            let seg = &live.seg;
            let view = seg.view()?;
            let conv: &[u32] = seg.cast(4)?;
            let mut names: HashMap<u32, (String, String)> = HashMap::new();
            for u in 0..seg.units {
                if live.is_dead(u) {
                    continue;
                }
                let c = *conv.get(u).ok_or(Corrupt)?;
                let key = match names.get(&c) {
                    Some(k) => k.clone(),
                    None => {
                        let (s, id) = seg.conversation(c as usize)?;
                        let k = (s.to_owned(), id.to_owned());
                        names.insert(c, k.clone());
                        k
                    }
                };
                let d = seg.dim;
                let codes = view.codes.get(u * d..(u + 1) * d).ok_or(Corrupt)?;
                let h = hashers.entry(key.clone()).or_default();
                h.update(bytemuck::cast_slice::<i8, u8>(codes));
                h.update(view.scale.get(u).ok_or(Corrupt)?.to_le_bytes());
                for m in seg.unit_messages(u)? {
                    h.update(m.message_id.as_bytes());
                    h.update([0]);
                    h.update(m.created_us.to_le_bytes());
                    h.update(m.role.as_bytes());
                    h.update([0]);
                }
                h.update([0xff]);
                out.entry(key).or_default().units.push(UnitRef {
                    segment: u32::try_from(si).map_err(|_| Corrupt)?,
                    unit: u32::try_from(u).map_err(|_| Corrupt)?,
                });
            }
        }
        for (key, h) in hashers {
            if let Some(c) = out.get_mut(&key) {
                let d = h.finalize();
                let mut b = [0u8; 8];
                b.copy_from_slice(&d[..8]);
                c.print = (i64::from_le_bytes(b) >> 1).abs().max(1);
            }
        }
        Ok(out)
    }

    /// The unit at `at` ([`Embeddings::units_by_conversation`]).
    ///
    /// # Errors
    /// [`Corrupt`] when the segment is damaged or `at` is not one of this set's units.
    pub fn unit_record(&self, at: UnitRef) -> Result<UnitRecord, Corrupt> {
        let live = self.segments().get(at.segment as usize).ok_or(Corrupt)?;
        let seg = &live.seg;
        let u = at.unit as usize;
        let view = seg.view()?;
        let d = seg.dim;
        let codes = view.codes.get(u * d..(u + 1) * d).ok_or(Corrupt)?.to_vec();
        let (first, last): (&[i64], &[i64]) = (seg.cast(7)?, seg.cast(8)?);
        Ok(UnitRecord {
            messages: seg.unit_messages(u)?,
            roles: *seg.bytes(6).get(u).ok_or(Corrupt)?,
            first_us: *first.get(u).ok_or(Corrupt)?,
            last_us: *last.get(u).ok_or(Corrupt)?,
            scale: *view.scale.get(u).ok_or(Corrupt)?,
            codes,
        })
    }
}

/// The exact score [`Embeddings::search`] gives a unit of code (`scale`, `codes`) for
/// the query `q`: the `f32` dot product of `q` with `v̂ = scale · codes`, summed in
/// order as the local search sums it (so a copy of the code elsewhere — the team
/// archive — scores the same to the bit).
pub fn code_score(q: &[f32], scale: f32, codes: &[i8]) -> f32 {
    let mut acc = -0.0f32;
    for (qd, &c) in q.iter().zip(codes) {
        acc += qd * (scale * f32::from(c));
    }
    acc
}
